"""The observation pipeline: observer → reflector → pruner, one run at a time.

Every model call happens outside a transaction; what a phase decided is written afterwards in a
short transaction, through memory.services, into the run's single `pipeline` batch (so the run
reverts as one unit). The run row is updated after every tool call so the progress page can follow.
"""

import hashlib
import json
import re
from collections import defaultdict
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Count, F
from django.utils import timezone

from memory import services
from memory.compaction.draft import KEPT, Draft, DraftDrop, DraftLine, input_lessons, validate
from memory.engines.base import EngineError
from memory.engines.registry import get_engine
from memory.models import (
    Category, ChangeBatch, CompactionProposal, Interaction, Lesson, LessonStatus, Memory,
    PipelineRun, PromotionCandidate, ProposalDrop, ProposalLine, Relevance, Tier, content_hash,
)
from memory.pipeline import offline, prompts
from memory.pipeline.coverage import coverage_counts, coverage_tag
from memory.pipeline.tools import (
    DROP_OBSERVATIONS, RECORD_OBSERVATIONS, RECORD_REFLECTIONS, ObserverTool, PrunerTool, ReflectorTool,
)
from memory.selectors import with_refs
from memory.textcheck import text_problem

REFLECTOR_MAX_PASSES = 2
PRUNER_MAX_PASSES = 2
MAX_TURNS = 12
PRUNE_REASON = "Pruned by the observation pipeline (pass {pass_no}): {relevance}, {coverage}."


class PipelineError(Exception):
    pass


def lesson_tokens(lesson):
    return max(1, len(lesson.text) // 4)


def memory_tokens(lessons):
    return sum(len(l.text) for l in lessons) // 4


def token_budget(memory):
    return memory.working_char_budget // 4


def stamp(dt):
    return timezone.localtime(dt).strftime("%Y-%m-%d %H:%M") if dt else ""


def lesson_stamp(lesson):
    return stamp(lesson.observed_at) or lesson.lesson_date.strftime("%Y-%m-%d 00:00")


def observation_line(lesson, coverage=None):
    tag = f" [coverage: {coverage_tag(coverage)}]" if coverage is not None else ""
    return f"[{lesson.pk}] {lesson_stamp(lesson)} [{lesson.relevance}]{tag} {lesson.text}"


# ---------------------------------------------------------------------------------------------
# Transcript chunks


def transcript_entries(raw):
    """Clean transcript entries [{id, role, at, text}]; entries without id or text are ignored."""
    entries = []
    for item in raw or []:
        if not isinstance(item, dict):
            continue
        entry_id = str(item.get("id") or "").strip()
        text = str(item.get("text") or "").strip()
        if entry_id and text:
            entries.append({"id": entry_id, "role": str(item.get("role") or "user").strip() or "user",
                            "at": str(item.get("at") or "").strip(), "text": text})
    return entries


def render_chunk(entries):
    blocks = []
    for entry in entries:
        at = f" @ {entry['at']}" if entry["at"] else ""
        blocks.append(f"[Source entry id: {entry['id']}]\n[{entry['role'].capitalize()}{at}]: {entry['text']}")
    return "\n\n".join(blocks)


LINE_RE = re.compile(r"^\[(?P<id>[^\]]+)\]\s+(?P<role>[A-Za-z ]+?)(?:\s+@\s+(?P<at>[0-9: -]+))?:\s*(?P<text>.+)$")


def parse_pasted_transcript(text):
    """A pasted transcript, one entry per line: "[id] role @ YYYY-MM-DD HH:MM: text" or "role: text"."""
    entries = []
    for n, line in enumerate((text or "").splitlines(), start=1):
        line = line.strip()
        if not line:
            continue
        match = LINE_RE.match(line)
        if match:
            entries.append({"id": match["id"].strip(), "role": match["role"].strip().lower(),
                            "at": (match["at"] or "").strip(), "text": match["text"].strip()})
            continue
        role, sep, rest = line.partition(":")
        if sep and role.strip().lower() in ("user", "assistant", "tool", "system"):
            entries.append({"id": f"e{n}", "role": role.strip().lower(), "at": "", "text": rest.strip()})
        elif entries:
            entries[-1]["text"] += " " + line
        else:
            entries.append({"id": f"e{n}", "role": "user", "at": "", "text": line})
    return entries


# ---------------------------------------------------------------------------------------------
# Start


def pipeline_sweep(*, memory_id=None):
    """Mark failed the running runs that stopped making progress (their worker died).

    What such a run already stored stays in its batch, revertible from the memory's history.
    Returns the number of runs marked failed.
    """
    cutoff = timezone.now() - timedelta(seconds=settings.PIPELINE_HEARTBEAT_TIMEOUT)
    stuck = PipelineRun.objects.filter(status=PipelineRun.Status.RUNNING, heartbeat_at__lt=cutoff)
    if memory_id is not None:
        stuck = stuck.filter(memory_id=memory_id)
    return stuck.update(
        status=PipelineRun.Status.FAILED, finished_at=timezone.now(),
        error=f"No progress for {settings.PIPELINE_HEARTBEAT_TIMEOUT} s: the worker running it stopped. "
              "Anything it stored is in its batch and can be reverted from the memory's history.",
    )


@transaction.atomic
def pipeline_start(*, memory, actor, interaction=None, transcript_text=""):
    """Create a run (and an interaction from a pasted transcript) and enqueue it after commit."""
    from memory.pipeline.tasks import pipeline_run_task

    problem = text_problem(transcript_text or "", multiline=True)
    if problem:
        raise PipelineError(f"The pasted transcript {problem}; nothing was started.")
    pipeline_sweep(memory_id=memory.pk)
    if PipelineRun.objects.filter(memory=memory, status=PipelineRun.Status.RUNNING).exists():
        raise PipelineError("A pipeline run for this memory is already in progress.")
    if interaction is None and transcript_text.strip():
        entries = parse_pasted_transcript(transcript_text)
        if not entries:
            raise PipelineError("The pasted transcript has no entries.")
        interaction = Interaction.objects.create(
            memory=memory, trigger_type="pasted transcript", summary=entries[0]["text"][:200], transcript=entries,
        )
    if interaction is not None and interaction.memory_id != memory.pk:
        raise PipelineError("That interaction belongs to another memory.")
    run = PipelineRun.objects.create(
        memory=memory, interaction=interaction, created_by=actor.user,
    )
    transaction.on_commit(lambda: pipeline_run_task.delay(run.pk))
    return run


# ---------------------------------------------------------------------------------------------
# Run


@dataclass
class _Progress:
    run: PipelineRun

    def save(self, **values):
        values["heartbeat_at"] = timezone.now()
        for key, value in values.items():
            setattr(self.run, key, value)
        PipelineRun.objects.filter(pk=self.run.pk).update(**values)

    def bump(self, **deltas):
        updates = {}
        for key, delta in deltas.items():
            if delta:
                setattr(self.run, key, getattr(self.run, key) + delta)
                updates[key] = F(key) + delta
        if updates:
            updates["heartbeat_at"] = self.run.heartbeat_at = timezone.now()
            PipelineRun.objects.filter(pk=self.run.pk).update(**updates)

    def enter(self, phase, pass_no=1, max_passes=1):
        completed = list(self.run.completed_phases)
        if self.run.phase and self.run.phase != phase and self.run.phase not in completed:
            completed.append(self.run.phase)
        self.save(phase=phase, pass_no=pass_no, max_passes=max_passes, completed_phases=completed)


def _counting(progress, handler, delta_fn):
    def wrapped(call):
        before = delta_fn()
        result = handler(call)
        after = delta_fn()
        progress.bump(tool_calls=1, **{k: after[k] - before[k] for k in after})
        return result
    return wrapped


def pipeline_run_execute(*, run_id, engine=None):
    """Run the three phases of a run. Failures are recorded on the run, never raised."""
    run = PipelineRun.objects.select_related("memory__persona", "interaction").get(pk=run_id)
    if run.status != PipelineRun.Status.RUNNING:
        return run
    memory = run.memory
    progress = _Progress(run)
    try:
        engine = engine or get_engine(memory.persona, memory=memory)
        progress.save(engine=str(getattr(engine, "provider", ""))[:20])
        ctx = _RunContext(run=run, memory=memory, engine=engine, progress=progress)
        _observe(ctx)
        _reflect(ctx)
        _prune(ctx)
    except EngineError as exc:
        progress.save(status=PipelineRun.Status.FAILED, error=f"The {getattr(engine, 'provider', 'model')} "
                      f"engine failed: {exc}", finished_at=timezone.now())
        return run
    except PipelineError as exc:
        progress.save(status=PipelineRun.Status.FAILED, error=str(exc), finished_at=timezone.now())
        return run
    except Exception as exc:
        # Never leave a run "running" for ever: the page would poll it and block the next run.
        progress.save(status=PipelineRun.Status.FAILED, finished_at=timezone.now(),
                      error=f"The run stopped on an unexpected error ({type(exc).__name__}); see the server log.")
        raise
    completed = list(run.completed_phases)
    if run.phase and run.phase not in completed:
        completed.append(run.phase)
    progress.save(status=PipelineRun.Status.COMPLETED, completed_phases=completed, finished_at=timezone.now())
    return run


@dataclass
class _RunContext:
    run: PipelineRun
    memory: Memory
    engine: object
    progress: _Progress

    def batch(self):
        if self.run.batch_id is None:
            batch = services.batch_create(
                memory=self.memory, kind=ChangeBatch.Kind.PIPELINE, actor=services.Actor.system("observation pipeline"),
                label=f"Pipeline run #{self.run.pk}", reason="Observations and reflections from the pipeline.",
            )
            self.progress.save(batch=batch)
        return self.run.batch

    def run_tools(self, *, system, prompt, tool, handler, purpose, policy, deltas):
        return self.engine.run_tools(
            system=system, prompt=prompt, tools=[tool], handler=_counting(self.progress, handler, deltas),
            purpose=purpose, max_turns=MAX_TURNS, offline_policy=policy,
        )


def _active_working(memory):
    return list(Lesson.objects.filter(memory=memory, tier=Tier.WORKING, status=LessonStatus.ACTIVE)
                .order_by("id").prefetch_related("refs"))


def _current_reflection_texts(memory):
    pending = list(PromotionCandidate.objects.filter(memory=memory, status=PromotionCandidate.Status.PENDING)
                   .order_by("id").values_list("text", flat=True))
    core = list(Lesson.objects.filter(memory=memory, tier=Tier.CORE, status=LessonStatus.ACTIVE)
                .order_by("id").values_list("text", flat=True))
    return core + pending


def _bulleted(lines):
    return "\n".join(lines) if lines else "(none yet)"


# --- observer ----------------------------------------------------------------------------------


def _observe(ctx):
    ctx.progress.enter("observer")
    entries = transcript_entries(ctx.run.interaction.transcript if ctx.run.interaction else [])
    if not entries:
        return
    working = _active_working(ctx.memory)
    recorded = []
    tool = ObserverTool(
        allowed_ids=[e["id"] for e in entries], known_hashes={l.content_hash for l in working},
        on_record=lambda when, content, relevance, ids: recorded.append((when, content, relevance, ids)),
    )
    prompt = (
        f"Current local time: {stamp(timezone.now())}\n\nCURRENT REFLECTIONS:\n"
        f"{_bulleted(_current_reflection_texts(ctx.memory))}\n\nCURRENT OBSERVATIONS:\n"
        f"{_bulleted([observation_line(l) for l in working])}\n\n"
        "Record what the new chunk adds with record_observations, citing its source entry ids. Stop "
        "and reply with one short sentence once it is covered.\n\nNEW CONVERSATION CHUNK:\n"
        f"{render_chunk(entries)}"
    )
    ctx.run_tools(
        system=prompts.OBSERVER_SYSTEM, prompt=prompt, tool=RECORD_OBSERVATIONS, handler=tool,
        purpose="pipeline observer", policy=offline.observer_policy(entries),
        deltas=lambda: {"observations_added": tool.added, "duplicates_skipped": tool.duplicates,
                        "rejected": tool.rejected},
    )
    if recorded:
        _store_observations(ctx, recorded)


@transaction.atomic
def _store_observations(ctx, recorded):
    batch = ctx.batch()
    actor = services.Actor.system("observation pipeline")
    # The run reflects and prunes these itself, so it does not wake the promotion detector or the
    # compaction check (working_lessons_added): they would race the reflector and the pruner.
    for when, content, relevance, source_ids in recorded:
        services.lesson_create(
            memory=ctx.memory, tier=Tier.WORKING, category=Category.OBSERVATION, text=content, relevance=relevance,
            lesson_date=timezone.localdate(when), observed_at=when, source_entry_ids=source_ids,
            interaction=ctx.run.interaction, actor=actor, batch=batch, bump=False,
        )
    services.memory_bump_version(ctx.memory)


# --- reflector ---------------------------------------------------------------------------------


def _reflect(ctx):
    working = _active_working(ctx.memory)
    pending = list(PromotionCandidate.objects.filter(memory=ctx.memory, status=PromotionCandidate.Status.PENDING))
    core = list(Lesson.objects.filter(memory=ctx.memory, tier=Tier.CORE, status=LessonStatus.ACTIVE).order_by("id"))
    ctx.progress.save(starting_reflections=len(pending) + len(core), starting_observations=len(working))
    if not working:
        ctx.progress.enter("reflector", 1, REFLECTOR_MAX_PASSES)
        return
    existing = {content_hash(c.text): ("candidate", c.pk) for c in pending}
    existing.update({content_hash(l.text): ("core", l.pk) for l in core})
    by_key = {("candidate", c.pk): c for c in pending}
    by_key.update({("core", l.pk): l for l in core})
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
        return len(current_support(key) - before) > 0 or key[0] == "core" and bool(set(ids) - before)

    obs_lines = [observation_line(l) for l in working]
    for pass_no in range(1, REFLECTOR_MAX_PASSES + 1):
        ctx.progress.enter("reflector", pass_no, REFLECTOR_MAX_PASSES)
        tool = ReflectorTool(observation_ids=[l.pk for l in working], existing=existing, on_new=on_new,
                             on_merge=on_merge, min_support=2 if pass_no == 1 else 1)
        reflections = _current_reflection_texts(ctx.memory) + [c for c, _ in new]
        prompt = (
            f"{prompts.pass_guidance(prompts.REFLECTOR_PASSES, pass_no, REFLECTOR_MAX_PASSES)}\n\n"
            f"CURRENT REFLECTIONS:\n{_bulleted(reflections)}\n\nOBSERVATIONS:\n{_bulleted(obs_lines)}"
        )
        ctx.run_tools(
            system=prompts.REFLECTOR_SYSTEM, prompt=prompt, tool=RECORD_REFLECTIONS, handler=tool,
            purpose="pipeline reflector", policy=offline.reflector_policy(working, pass_no, existing),
            deltas=lambda: {"reflections_added": tool.added, "reflections_merged": tool.merged,
                            "rejected": tool.rejected},
        )
        existing = tool.existing
    if new or any(merges.values()):
        _store_reflections(ctx, working, new, merges, by_key)


def _choose_category(text):
    lowered = text.lower()
    if re.search(r"\b(decided|decision|chose|choose|will use|switch(ed|ing)? (to|from)|instead of)\b", lowered):
        return "DECISION"
    if re.search(r"\b(architecture|module|service|layer|schema|database|queue|api|component)\b", lowered):
        return "ARCHITECTURE"
    return "PATTERN"


def _evidence_fingerprint(evidence):
    return hashlib.sha256(json.dumps(evidence, sort_keys=True).encode()).hexdigest()


@transaction.atomic
def _store_reflections(ctx, working, new, merges, by_key):
    lessons = {l.pk: l for l in working}
    refs = {lesson.pk: [r.as_text() for r in lesson.refs.all()] for lesson in working}
    engine = str(getattr(ctx.engine, "provider", "offline"))[:40]
    actor = services.Actor.system("observation pipeline")
    to_core = ctx.memory.reflections_to_core
    Through = PromotionCandidate.supporting.through
    for content, ids in new:
        ids = sorted(ids)
        ref_union = list(dict.fromkeys(r for i in ids for r in refs[i]))
        if to_core:
            services.lesson_create(
                memory=ctx.memory, tier=Tier.CORE, category=_choose_category(content), text=content, refs=ref_union,
                relevance=_highest([lessons[i] for i in ids]), actor=actor, batch=ctx.batch(),
                derived_from=[lessons[i] for i in ids], bump=False,
            )
            continue
        evidence = {"lessons": ids, "confirmations": [], "source": "reflector"}
        candidate = PromotionCandidate.objects.create(
            memory=ctx.memory, text=content, category=_choose_category(content), refs=ref_union, evidence=evidence,
            fingerprint=_evidence_fingerprint(evidence),
            supporting_state={str(i): {"hash": lessons[i].content_hash} for i in ids},
            distinct_dates=len({lessons[i].lesson_date for i in ids}), engine=engine,
        )
        Through.objects.bulk_create([Through(promotioncandidate_id=candidate.pk, lesson_id=i) for i in ids])
    for key, ids in merges.items():
        obj = by_key[key]
        if key[0] == "candidate":
            have = set(obj.evidence.get("lessons", []))
            added = sorted(set(ids) - have)
            if not added:
                continue
            obj.evidence = {**obj.evidence, "lessons": sorted(have | set(added))}
            obj.supporting_state = {**obj.supporting_state,
                                    **{str(i): {"hash": lessons[i].content_hash} for i in added}}
            obj.save(update_fields=["evidence", "supporting_state"])
            Through.objects.bulk_create([Through(promotioncandidate_id=obj.pk, lesson_id=i) for i in added],
                                        ignore_conflicts=True)
        else:
            obj.derived_from.add(*[lessons[i] for i in ids])
    services.memory_bump_version(ctx.memory)


def _highest(lessons):
    order = [r.value for r in Relevance]
    return max((l.relevance for l in lessons), key=order.index, default=Relevance.MEDIUM)


# --- pruner ------------------------------------------------------------------------------------


def _prune(ctx):
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
    coverage = coverage_counts(ctx.memory, [l.pk for l in working])
    tool = PrunerTool(pool=working, cost=lesson_tokens)
    drop_pass = {}
    for pass_no in range(1, PRUNER_MAX_PASSES + 1):
        ctx.progress.enter("pruner", pass_no, PRUNER_MAX_PASSES)
        dropped_before = len(tool.dropped)
        remaining = [l for l in working if l.pk not in set(tool.dropped)]
        still = max(0, memory_tokens(remaining) - budget)
        if still == 0:
            break
        pressure = (f"Pool: {len(remaining)} observations, about {memory_tokens(remaining)} tokens. Target: "
                    f"{budget} tokens. Still to cut: about {still} tokens. "
                    f"{prompts.pass_guidance(prompts.PRUNER_PASSES, pass_no, PRUNER_MAX_PASSES)}")
        lines = [observation_line(l, coverage.get(l.pk, 0)) for l in remaining]
        prompt = f"{pressure}\n\nOBSERVATIONS:\n" + "\n".join(lines)
        ctx.run_tools(
            system=prompts.PRUNER_SYSTEM, prompt=prompt, tool=DROP_OBSERVATIONS, handler=tool,
            purpose="pipeline pruner", policy=offline.pruner_policy(remaining, coverage, still, lesson_tokens),
            deltas=lambda: {"observations_dropped": len(tool.dropped)},
        )
        for lesson_id in tool.dropped[dropped_before:]:
            drop_pass[lesson_id] = pass_no
        if len(tool.dropped) == dropped_before:
            break
    if tool.dropped:
        proposal = _store_drop_proposal(ctx, working, tool.dropped, drop_pass, coverage, base_version)
        ctx.progress.save(proposal_id=proposal.pk)


@transaction.atomic
def _store_drop_proposal(ctx, working, dropped, drop_pass, coverage, base_version):
    from memory.formats.lines import render_working

    dropped_set = set(dropped)
    by_id = {l.pk: l for l in working}
    draft = Draft(
        lines=[DraftLine(category=l.category, text=l.text, refs=[r.as_text() for r in l.refs.all()],
                         source_ids=[l.pk], kind=KEPT) for l in working if l.pk not in dropped_set],
        drops=[DraftDrop(i, PRUNE_REASON.format(pass_no=drop_pass.get(i, 1), relevance=by_id[i].relevance,
                                                coverage=coverage_tag(coverage.get(i, 0)))) for i in dropped],
    )
    target = len(draft.lines)
    errors = validate(draft, input_lessons(working), target)
    proposal = CompactionProposal.objects.create(
        memory=ctx.memory, base_version=base_version, engine=str(getattr(ctx.engine, "provider", ""))[:20],
        model_name=str(getattr(ctx.engine, "model", "") or "")[:100],
        status=CompactionProposal.Status.INVALID if errors else CompactionProposal.Status.PENDING,
        trigger=CompactionProposal.Trigger.PRUNING,
        trigger_detail=f"Pipeline run #{ctx.run.pk}: working memory over its token budget"[:300],
        validation_errors=errors, input_lesson_ids=[l.pk for l in working], target_lines=target,
        before_text=render_working(with_refs(working)),
    )
    ProposalLine.objects.bulk_create(
        ProposalLine(proposal=proposal, position=i, category=l.category[:20], text=l.text, refs=l.refs,
                     source_ids=l.source_ids, kind=l.kind or KEPT) for i, l in enumerate(draft.lines, start=1)
    )
    ProposalDrop.objects.bulk_create(
        ProposalDrop(proposal=proposal, lesson_id=d.lesson_id, reason=d.reason[:500], had_refs=d.had_refs,
                     listed=d.listed) for d in draft.drops
    )
    return proposal


def relevance_histogram(memory):
    """{relevance: count} of the active working lessons, in every relevance order (one query)."""
    counts = dict(Lesson.objects.filter(memory=memory, tier=Tier.WORKING, status=LessonStatus.ACTIVE)
                  .order_by().values_list("relevance").annotate(n=Count("id")))
    return [(r.value, counts.get(r.value, 0)) for r in Relevance]
