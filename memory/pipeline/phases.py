"""The three phases of a pipeline run: observer, reflector, pruner.

Each phase asks the engine through one tool whose rules are enforced in code (memory.pipeline.tools),
then writes what it decided in a short transaction, through memory.services, into the run's batch.
"""

import re
from collections import defaultdict

from django.db import transaction
from django.utils import timezone

from memory import services
from memory.compaction.draft import KEPT, Draft, DraftDrop, DraftLine
from memory.compaction.services import CompactionError, compaction_store_draft
from memory.models import (
    Category,
    CompactionProposal,
    Lesson,
    LessonStatus,
    Memory,
    PromotionCandidate,
    Relevance,
    Tier,
    content_hash,
)
from memory.pipeline import offline, prompts
from memory.pipeline.coverage import coverage_counts, coverage_tag
from memory.pipeline.tools import (
    DROP_OBSERVATIONS,
    RECORD_OBSERVATIONS,
    RECORD_REFLECTIONS,
    ObserverTool,
    PrunerTool,
    ReflectorTool,
)
from memory.pipeline.transcripts import render_chunk, transcript_entries
from memory.promotions.reflections import (
    ObservationGroups,
    covered_lesson_sets,
    reflection_propose,
    reflection_support,
)
from memory.refs import refs_in_text

REFLECTOR_MAX_PASSES = 2
PRUNER_MAX_PASSES = 2
PRUNE_REASON = "Pruned by the observation pipeline (pass {pass_no}): {relevance}, {coverage}."


def lesson_tokens(lesson):
    return max(1, len(lesson.text) // 4)


def memory_tokens(lessons):
    return sum(len(lesson.text) for lesson in lessons) // 4


def token_budget(memory):
    return memory.working_char_budget // 4


def stamp(dt):
    return timezone.localtime(dt).strftime("%Y-%m-%d %H:%M") if dt else ""


def lesson_stamp(lesson):
    return stamp(lesson.observed_at) or lesson.lesson_date.strftime("%Y-%m-%d 00:00")


def observation_line(lesson, coverage=None):
    tag = f" [coverage: {coverage_tag(coverage)}]" if coverage is not None else ""
    return f"[{lesson.pk}] {lesson_stamp(lesson)} [{lesson.relevance}]{tag} {lesson.text}"


def _active_working(memory):
    return list(
        Lesson.objects.filter(memory=memory, tier=Tier.WORKING, status=LessonStatus.ACTIVE)
        .order_by("id")
        .prefetch_related("refs")
    )


def _current_reflection_texts(memory):
    pending = list(
        PromotionCandidate.objects.filter(memory=memory, status=PromotionCandidate.Status.PENDING)
        .order_by("id")
        .values_list("text", flat=True)
    )
    core = list(
        Lesson.objects.filter(memory=memory, tier=Tier.CORE, status=LessonStatus.ACTIVE)
        .order_by("id")
        .values_list("text", flat=True)
    )
    return core + pending


def _bulleted(lines):
    return "\n".join(lines) if lines else "(none yet)"


# --- observer ----------------------------------------------------------------------------------


def observe(ctx):
    ctx.progress.enter("observer")
    entries = transcript_entries(ctx.run.interaction.transcript if ctx.run.interaction else [])
    if not entries:
        return
    working = _active_working(ctx.memory)
    recorded = []
    tool = ObserverTool(
        allowed_ids=[e["id"] for e in entries],
        known_hashes={lesson.content_hash for lesson in working},
        on_record=lambda when, content, relevance, ids: recorded.append((when, content, relevance, ids)),
    )
    prompt = (
        f"Current local time: {stamp(timezone.now())}\n\nCURRENT REFLECTIONS:\n"
        f"{_bulleted(_current_reflection_texts(ctx.memory))}\n\nCURRENT OBSERVATIONS:\n"
        f"{_bulleted([observation_line(lesson) for lesson in working])}\n\n"
        "Record what the new chunk adds with record_observations, citing its source entry ids. Stop "
        "and reply with one short sentence once it is covered.\n\nNEW CONVERSATION CHUNK:\n"
        f"{render_chunk(entries)}"
    )
    ctx.run_tools(
        system=prompts.OBSERVER_SYSTEM,
        prompt=prompt,
        tool=RECORD_OBSERVATIONS,
        handler=tool,
        purpose="pipeline observer",
        policy=offline.observer_policy(entries),
        deltas=lambda: {
            "observations_added": tool.added,
            "duplicates_skipped": tool.duplicates,
            "rejected": tool.rejected,
        },
    )
    if recorded:
        _store_observations(ctx, recorded)


@transaction.atomic
def _store_observations(ctx, recorded):
    batch = ctx.batch()
    actor = services.Actor.system("observation pipeline")
    entry_text = {e["id"]: e["text"] for e in transcript_entries(ctx.run.interaction.transcript)}
    # The run reflects and prunes these itself, so it does not wake the promotion detector or the
    # compaction check (working_lessons_added): they would race the reflector and the pruner.
    for when, content, relevance, source_ids in recorded:
        # Code the observation or its cited entries name (path#Lx-Ly) becomes the lesson's refs.
        refs = refs_in_text(content, *(entry_text.get(i, "") for i in source_ids))
        services.lesson_create(
            memory=ctx.memory,
            tier=Tier.WORKING,
            category=Category.OBSERVATION,
            text=content,
            relevance=relevance,
            refs=refs,
            lesson_date=timezone.localdate(when),
            observed_at=when,
            source_entry_ids=source_ids,
            interaction=ctx.run.interaction,
            actor=actor,
            batch=batch,
            bump=False,
        )
    services.memory_bump_version(ctx.memory)


# --- reflector ---------------------------------------------------------------------------------


def reflect(ctx):
    working = _active_working(ctx.memory)
    pending = list(PromotionCandidate.objects.filter(memory=ctx.memory, status=PromotionCandidate.Status.PENDING))
    core = list(Lesson.objects.filter(memory=ctx.memory, tier=Tier.CORE, status=LessonStatus.ACTIVE).order_by("id"))
    ctx.progress.save(starting_reflections=len(pending) + len(core), starting_observations=len(working))
    if not working:
        ctx.progress.enter("reflector", 1, REFLECTOR_MAX_PASSES)
        return
    # What candidates (pending or decided) already hold: the same group is not proposed again.
    covered = covered_lesson_sets(ctx.memory)
    existing = {content_hash(c.text): ("candidate", c.pk) for c in pending}
    existing.update({content_hash(lesson.text): ("core", lesson.pk) for lesson in core})
    by_key = {("candidate", c.pk): c for c in pending}
    by_key.update({("core", lesson.pk): lesson for lesson in core})
    new = []  # [content, set(ids)]
    merges = defaultdict(set)  # existing key -> ids to add

    def current_support(key):
        if key[0] == "new":
            return new[key[1]][1]
        obj = by_key[key]
        have = set(obj.evidence.get("lessons", [])) if key[0] == "candidate" else set()
        return have | merges[key]

    def on_new(content, ids):
        new.append([content, set(ids)])
        return ("new", len(new) - 1)

    def on_merge(key, ids):
        before = set(current_support(key))
        if key[0] == "new":
            new[key[1]][1].update(ids)
        else:
            merges[key].update(ids)
        return len(current_support(key) - before) > 0 or (key[0] == "core" and bool(set(ids) - before))

    obs_lines = [observation_line(lesson) for lesson in working]
    for pass_no in range(1, REFLECTOR_MAX_PASSES + 1):
        ctx.progress.enter("reflector", pass_no, REFLECTOR_MAX_PASSES)
        tool = ReflectorTool(
            observation_ids=[lesson.pk for lesson in working],
            existing=existing,
            on_new=on_new,
            on_merge=on_merge,
            min_support=2 if pass_no == 1 else 1,
        )
        reflections = _current_reflection_texts(ctx.memory) + [c for c, _ in new]
        prompt = (
            f"{prompts.pass_guidance(prompts.REFLECTOR_PASSES, pass_no, REFLECTOR_MAX_PASSES)}\n\n"
            f"CURRENT REFLECTIONS:\n{_bulleted(reflections)}\n\nOBSERVATIONS:\n{_bulleted(obs_lines)}"
        )
        ctx.run_tools(
            system=prompts.REFLECTOR_SYSTEM,
            prompt=prompt,
            tool=RECORD_REFLECTIONS,
            handler=tool,
            purpose="pipeline reflector",
            policy=offline.reflector_policy(working, pass_no, existing, covered),
            deltas=lambda tool=tool: {
                "reflections_added": tool.added,
                "reflections_merged": tool.merged,
                "rejected": tool.rejected,
            },
        )
        existing = tool.existing
    if new or any(merges.values()):
        _store_reflections(ctx, working, new, merges, by_key, covered)


def _choose_category(text):
    lowered = text.lower()
    if re.search(r"\b(decided|decision|chose|choose|will use|switch(ed|ing)? (to|from)|instead of)\b", lowered):
        return "DECISION"
    if re.search(r"\b(architecture|module|service|layer|schema|database|queue|api|component)\b", lowered):
        return "ARCHITECTURE"
    return "PATTERN"


@transaction.atomic
def _store_reflections(ctx, working, new, merges, by_key, covered=()):
    lessons = {lesson.pk: lesson for lesson in working}
    refs = {lesson.pk: [r.as_text() for r in lesson.refs.all()] for lesson in working}
    engine = str(getattr(ctx.engine, "provider", "offline"))[:40]
    actor = services.Actor.system("observation pipeline")
    to_core = ctx.memory.reflections_to_core
    # Whatever the engine proposed, a reflection keeps only observations detection would group.
    groups = ObservationGroups.of_lessons(working)
    for content, ids in new:
        ids = groups.fit(ids, content)
        if not ids or any(set(ids) <= have for have in covered):
            continue
        ref_union = list(dict.fromkeys(r for i in ids for r in refs[i]))
        if to_core:
            services.lesson_create(
                memory=ctx.memory,
                tier=Tier.CORE,
                category=_choose_category(content),
                text=content,
                refs=ref_union,
                relevance=Relevance.highest(lessons[i].relevance for i in ids),
                actor=actor,
                batch=ctx.batch(),
                derived_from=[lessons[i] for i in ids],
                bump=False,
            )
            continue
        reflection_propose(
            memory=ctx.memory,
            text=content,
            category=_choose_category(content),
            lessons=[lessons[i] for i in ids],
            refs=ref_union,
            engine=engine,
            run_id=ctx.run.pk,
        )
    for key, ids in merges.items():
        obj = by_key[key]
        if key[0] == "candidate":
            reflection_support(candidate=obj, lessons=[lessons[i] for i in sorted(ids)], groups=groups)
        else:
            services.lesson_add_sources(lesson=obj, sources=[lessons[i] for i in ids])
    services.memory_bump_version(ctx.memory)


# --- pruner ------------------------------------------------------------------------------------


def prune(ctx):
    working = _active_working(ctx.memory)
    budget = token_budget(ctx.memory)
    mass = memory_tokens(working)
    if mass <= budget:
        ctx.progress.enter("pruner", 0, 0)
        return
    if CompactionProposal.objects.filter(memory=ctx.memory, status=CompactionProposal.Status.PENDING).exists():
        ctx.progress.enter("pruner", 0, 0)
        ctx.progress.save(error="Pruning skipped: a compaction proposal is already waiting for review.")
        return
    base_version = Memory.objects.values_list("version", flat=True).get(pk=ctx.memory.pk)
    coverage = coverage_counts(ctx.memory, [lesson.pk for lesson in working])
    tool = PrunerTool(pool=working, cost=lesson_tokens)
    drop_pass = {}
    for pass_no in range(1, PRUNER_MAX_PASSES + 1):
        ctx.progress.enter("pruner", pass_no, PRUNER_MAX_PASSES)
        dropped_before = len(tool.dropped)
        remaining = [lesson for lesson in working if lesson.pk not in set(tool.dropped)]
        still = max(0, memory_tokens(remaining) - budget)
        if still == 0:
            break
        pressure = (
            f"Pool: {len(remaining)} observations, about {memory_tokens(remaining)} tokens. Target: "
            f"{budget} tokens. Still to cut: about {still} tokens. "
            f"{prompts.pass_guidance(prompts.PRUNER_PASSES, pass_no, PRUNER_MAX_PASSES)}"
        )
        lines = [observation_line(lesson, coverage.get(lesson.pk, 0)) for lesson in remaining]
        prompt = f"{pressure}\n\nOBSERVATIONS:\n" + "\n".join(lines)
        ctx.run_tools(
            system=prompts.PRUNER_SYSTEM,
            prompt=prompt,
            tool=DROP_OBSERVATIONS,
            handler=tool,
            purpose="pipeline pruner",
            policy=offline.pruner_policy(remaining, coverage, still, lesson_tokens),
            deltas=lambda: {"observations_dropped": len(tool.dropped)},
        )
        for lesson_id in tool.dropped[dropped_before:]:
            drop_pass[lesson_id] = pass_no
        if len(tool.dropped) == dropped_before:
            break
    if tool.dropped:
        try:
            proposal = _store_drop_proposal(ctx, working, tool.dropped, drop_pass, coverage, base_version)
        except CompactionError as exc:
            ctx.progress.save(error=f"Pruning not proposed: {exc}")
            return
        ctx.progress.save(proposal_id=proposal.pk)


def _store_drop_proposal(ctx, working, dropped, drop_pass, coverage, base_version):
    """The drops as a compaction proposal (every other lesson kept as it is), reviewed on the usual diff page."""
    dropped_set = set(dropped)
    by_id = {lesson.pk: lesson for lesson in working}
    draft = Draft(
        lines=[
            DraftLine(
                category=lesson.category,
                text=lesson.text,
                refs=[r.as_text() for r in lesson.refs.all()],
                source_ids=[lesson.pk],
                kind=KEPT,
            )
            for lesson in working
            if lesson.pk not in dropped_set
        ],
        drops=[
            DraftDrop(
                i,
                PRUNE_REASON.format(
                    pass_no=drop_pass.get(i, 1), relevance=by_id[i].relevance, coverage=coverage_tag(coverage.get(i, 0))
                ),
            )
            for i in dropped
        ],
    )
    return compaction_store_draft(
        memory=ctx.memory,
        lessons=working,
        draft=draft,
        base_version=base_version,
        actor=services.Actor.system("observation pipeline"),
        engine=getattr(ctx.engine, "provider", ""),
        model_name=getattr(ctx.engine, "model", "") or "",
        trigger=CompactionProposal.Trigger.PRUNING,
        trigger_detail=f"Pipeline run #{ctx.run.pk}: working memory over its token budget",
        target_lines=len(draft.lines),
    )
