"""Writes of the promotion feature: detect candidates, approve exactly once, reject, follow reverts."""

import hashlib
import json
import math
from collections import defaultdict
from dataclasses import dataclass, field

from django.conf import settings
from django.core.cache import cache
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.db.models import Case, DateField, F, Value, When
from django.utils import timezone

from memory import services
from memory.models import (
    ActorType,
    ChangeBatch,
    DetectionRun,
    Lesson,
    LessonConfirmation,
    LessonRef,
    LessonStatus,
    Memory,
    ModelGroup,
    ModelPlacement,
    PromotionCandidate,
    Relevance,
    Tier,
)
from memory.engines.base import EngineError
from memory.engines.registry import get_engine
from memory.promotions import detection, proposals, verification, wording
from memory.promotions.selectors import core_usage_after
from memory.refs import Ref, parse_ref
from memory.roles import APPROVE
from memory.textcheck import check_text

Status = PromotionCandidate.Status
# A group whose evidence one of these already covers is not proposed again.
COVERING_STATUSES = (Status.PENDING, Status.REJECTED, Status.REVERTED, Status.APPROVED)
# Stamped on the candidates this detection makes. A pending candidate with another stamp came from
# an earlier detector: the next run keeps it only if it is still one of the groups found now.
DETECTOR = "words-3"
REFLECTOR = "reflector"


class PromotionError(Exception):
    """An approval or rejection that cannot happen; the message says why, for the person who asked."""


class AlreadyDecided(PromotionError):
    pass


class NeedsReview(PromotionError):
    """The supporting lessons changed after the proposal was made."""


class DetectionError(PromotionError):
    """Detection could not finish (the model's check failed or was unusable); nothing was changed."""


class DetectionOverBudget(DetectionError):
    """The run would have used more model tokens than the persona's detection budget."""


@dataclass
class DetectionResult:
    created: list = field(default_factory=list)
    superseded: list = field(default_factory=list)
    groups: int = 0
    run: DetectionRun | None = None


@dataclass
class ApprovalResult:
    candidate: PromotionCandidate
    core_lesson: Lesson
    core_chars: int
    core_budget: int

    @property
    def over_budget(self):
        return self.core_chars > self.core_budget


def _evidence(group):
    return {"lessons": sorted(group.lesson_ids), "confirmations": sorted(group.confirmation_ids)}


def _fingerprint(evidence):
    return hashlib.sha256(json.dumps(evidence, sort_keys=True).encode()).hexdigest()


class _Coverage:
    """Which candidates already cover a group's evidence, found through the group's first lesson."""

    def __init__(self, candidates):
        self.by_lesson = defaultdict(list)
        for candidate in candidates:
            self.add(candidate)

    def add(self, candidate):
        entry = (candidate, set(candidate.evidence.get("lessons", ())), set(candidate.evidence.get("confirmations", ())))
        for lesson_id in entry[1]:
            self.by_lesson[lesson_id].append(entry)

    def covers(self, evidence):
        lessons, confirmations = set(evidence["lessons"]), set(evidence["confirmations"])
        return any(
            lessons <= covered_lessons and confirmations <= covered_confirmations
            for candidate, covered_lessons, covered_confirmations in self.by_lesson.get(evidence["lessons"][0], ())
            if candidate.status in COVERING_STATUSES
        )

    def overlapping(self, lesson_ids):
        seen = {}
        for lesson_id in lesson_ids:
            for candidate, _, _ in self.by_lesson.get(lesson_id, ()):
                seen[candidate.pk] = candidate
        return list(seen.values())


def _load_facts(memory):
    rows = list(
        Lesson.objects.filter(memory=memory, tier=Tier.WORKING, status=LessonStatus.ACTIVE)
        .order_by("id")
        # A lesson imported without a date only carries the import day for ordering: it is no date seen.
        .annotate(seen_on=Case(When(undated=True, then=Value(None)), default=F("lesson_date"),
                               output_field=DateField()))
        .values_list("id", "text", "content_hash", "seen_on")
    )
    paths = defaultdict(list)
    for lesson_id, path in LessonRef.objects.filter(
        lesson__memory=memory, lesson__tier=Tier.WORKING, lesson__status=LessonStatus.ACTIVE
    ).values_list("lesson_id", "path"):
        paths[lesson_id].append(path)
    confirmations = defaultdict(list)
    for conf_id, lesson_id, day in LessonConfirmation.objects.filter(
        lesson__memory=memory, lesson__tier=Tier.WORKING, lesson__status=LessonStatus.ACTIVE
    ).values_list("id", "lesson_id", "confirmed_on"):
        confirmations[lesson_id].append((conf_id, day))
    current = {r[0]: r[2] for r in rows}
    return detection.facts_from_rows(rows, paths, confirmations), current


def _from_reflector(candidate):
    # A reflection holds the meaning of its observations, so pruning them (a reviewed drop) does not
    # make it stale; editing one still does.
    return candidate.evidence.get("source") == "reflector"


def _outdated(candidate, current_groups):
    """A pending candidate of an earlier detector that is not one of the groups found now."""
    if _from_reflector(candidate) or candidate.detector == DETECTOR:
        return False
    return tuple(sorted(candidate.evidence.get("lessons", ()))) not in current_groups


def _is_stale(candidate, current_hashes):
    """A pending candidate whose supporting lessons are no longer active working lessons as proposed."""
    for lesson_id, state in candidate.supporting_state.items():
        current = current_hashes.get(int(lesson_id))
        if current is None and _from_reflector(candidate):
            continue
        if current != state.get("hash"):
            return True
    return False


def _members(lesson_ids, words=None):
    """Light records of the grouped lessons and their refs: two queries, no model instances."""
    refs = defaultdict(list)
    for lesson_id, path, start, end in (
        LessonRef.objects.filter(lesson_id__in=lesson_ids)
        .order_by("lesson_id", "position", "id")
        .values_list("lesson_id", "path", "start_line", "end_line")
    ):
        refs[lesson_id].append(Ref(path=path, start_line=start, end_line=end))
    return [
        (
            wording.Member(pk=pk, text=text, category=category, lesson_date=day, content_hash=key,
                           words=(words or {}).get(pk)),
            refs[pk],
        )
        for pk, text, category, day, key in Lesson.objects.filter(pk__in=lesson_ids)
        .order_by("id")
        .values_list("id", "text", "category", "lesson_date", "content_hash")
    ]


def _engine_for(memory, engine):
    if engine is not None:
        return engine
    try:
        return get_engine(memory.persona, memory=memory)
    except EngineError as exc:
        raise DetectionError(f"Detection could not start: {exc}. No candidate was changed.") from None


def _lesson_rows(lesson_ids, *fields):
    """{id: (fields...)} of these lessons, in chunks that stay under SQLite's parameter limit."""
    found = {}
    for chunk in range(0, len(lesson_ids), 900):
        for pk, *values in Lesson.objects.filter(pk__in=lesson_ids[chunk:chunk + 900]).values_list("id", *fields):
            found[pk] = values
    return found


def _texts(lesson_ids):
    return {pk: text for pk, (text,) in _lesson_rows(lesson_ids, "text").items()}


def _placements(memory, facts):
    """What the model has placed in this memory. A lesson edited since it was placed counts as not
    placed: its placement is removed here, so it is shown to the model again."""
    current = {f.id: f.text_key for f in facts}
    rows = list(ModelPlacement.objects.filter(memory=memory).values_list("id", "lesson_id", "group_id", "content_hash"))
    edited = [pk for pk, lesson_id, _, key in rows if lesson_id in current and current[lesson_id] != key]
    if edited:
        ModelPlacement.objects.filter(pk__in=edited).delete()
    groups = {
        pk: proposals.ModelGroupState(ids=set(), summary=summary, reason=reason, pk=pk, touched=n)
        for n, (pk, summary, reason) in enumerate(
            ModelGroup.objects.filter(memory=memory).order_by("updated_at", "id").values_list("id", "summary", "reason"),
            start=1)
    }
    edited = set(edited)
    placed = set()
    for pk, lesson_id, group_id, _ in rows:
        if pk in edited:
            continue
        placed.add(lesson_id)
        if group_id in groups and lesson_id in current:
            groups[group_id].ids.add(lesson_id)
    # A group whose lessons all left working memory (promoted, deleted) is no longer offered.
    state = proposals.Placements(groups=[g for g in groups.values() if g.ids], placed=placed)
    # The newest lessons the model left alone, as many as could be offered as context in one batch.
    enough = math.ceil(settings.PROMOTION_PROPOSAL_BATCH_TOKENS / 10)
    for pk, text, day, undated in (
        Lesson.objects.filter(model_placement__memory=memory, model_placement__group__isnull=True,
                              tier=Tier.WORKING, status=LessonStatus.ACTIVE)
        .order_by("-lesson_date", "-id").values_list("id", "text", "lesson_date", "undated")[:enough]
    ):
        state.lone[pk] = proposals.Item(id=pk, day=None if undated else day, text=text)
    return state


@transaction.atomic
def _store_placements(memory, batch, changed, hashes):
    """Keep one accepted batch: its new and changed groups and where each of its lessons went."""
    Memory.objects.select_for_update().filter(pk=memory.pk).first()  # one writer per memory, as detection
    now = timezone.now()
    for group in changed:
        if group.pk is None:
            group.pk = ModelGroup.objects.create(memory=memory, summary=group.summary, reason=group.reason,
                                                 created_at=now, updated_at=now).pk
        else:
            ModelGroup.objects.filter(pk=group.pk).update(reason=group.reason, updated_at=now)
    owner = {i: group.pk for group in changed for i in group.ids}
    ids = [item.id for item in batch.items]
    for group in changed:
        joined = [item.id for item in batch.earlier if item.id in group.ids]
        if joined:
            ModelPlacement.objects.filter(lesson_id__in=joined).update(group_id=group.pk)
    ModelPlacement.objects.filter(lesson_id__in=ids).delete()
    ModelPlacement.objects.bulk_create(
        [ModelPlacement(memory=memory, lesson_id=i, group_id=owner.get(i), content_hash=hashes[i], placed_at=now)
         for i in ids],
        batch_size=500,
    )


def _model_groups(memory, facts, engine, budget, place_new=True):
    """The model's groups of this memory, after showing it the lessons it has not placed yet (or, with
    place_new=False, as placed so far, without calling the model)."""
    state = _placements(memory, facts)
    if not place_new:
        return state.groups, 0
    unplaced = [f for f in facts if f.id not in state.placed]
    rows = _lesson_rows([f.id for f in unplaced], "text", "lesson_date", "undated")
    items = [proposals.Item(id=pk, day=None if undated else day, text=text)
             for pk, (text, day, undated) in sorted(rows.items())]
    hashes = {f.id: f.text_key for f in facts}
    sent = proposals.place(
        engine, items, state, budget=budget,
        batch_tokens=settings.PROMOTION_PROPOSAL_BATCH_TOKENS,
        max_output_tokens=settings.PROMOTION_PROPOSAL_MAX_OUTPUT_TOKENS,
        on_batch=lambda batch, changed: _store_placements(memory, batch, changed, hashes),
    )
    return state.groups, len(items) if sent else 0


def _verified(memory, proposed, facts, engine, min_dates):
    """With a model engine, the groups the model confirms (trimmed), each with its note."""
    if engine.provider == "offline" or not proposed:
        return [(p, "") for p in proposed]
    ids = [i for p in proposed for i in p.group.lesson_ids]
    lessons = {lesson.pk: lesson for lesson, _ in _members(ids)}
    by_id = {f.id: f for f in facts}
    try:
        return proposals.verify(proposed, engine=engine, lessons=lessons, facts_by_id=by_id, min_dates=min_dates)
    except verification.VerificationError as exc:
        raise DetectionError(str(exc)) from None


def _run_budget(memory, engine):
    limit = memory.persona.detection_token_budget if memory.persona_id else None
    return proposals.Budget(limit, getattr(engine, "recorder", None))


def promotion_detect(*, memory, engine=None, place_new=True):
    """Propose every group of working lessons that reached the memory's threshold and is not proposed yet.

    With a model engine (anthropic, openai) the model first groups the lessons it has not seen yet
    (proposals.py; with place_new=False, as after each append, only the groups it made before are
    used and no grouping call is made) and its groups are merged with the word rule's; each new group is then checked
    by the model (verification.py). A grouping or check that fails or cannot be read raises
    DetectionError and changes no candidate, and so does a run that would exceed the persona's
    token budget (DetectionOverBudget). Pending candidates whose lessons changed are superseded,
    and so are pending candidates of an earlier detector that are not among the groups found now;
    a group that gained evidence (a new lesson or confirmation) replaces its pending candidate.
    Rejected groups stay rejected until new evidence arrives. Running it twice on unchanged memory
    creates nothing. Every run is recorded as a DetectionRun (engine, calls, tokens, outcome).
    """
    engine = _engine_for(memory, engine)
    budget = _run_budget(memory, engine)
    run = DetectionRun(memory=memory, engine=str(getattr(engine, "provider", ""))[:40], started_at=timezone.now())
    try:
        result = _detect(memory, engine, budget, run, place_new)
    except DetectionError as exc:
        run.status = DetectionRun.Status.OVER_BUDGET if isinstance(exc, DetectionOverBudget) else DetectionRun.Status.FAILED
        run.message = str(exc)
        _finish_run(run, budget)
        raise
    n = len(result.created)
    run.status = DetectionRun.Status.DONE
    run.created = n
    run.message = f"{n} new candidate{'s' if n != 1 else ''}, {len(result.superseded)} superseded."
    result.run = _finish_run(run, budget)
    return result


def _finish_run(run, budget):
    if budget.recorder is not None:
        run.calls, run.tokens_in, run.tokens_out = budget.recorder.totals(budget.since)
    run.finished_at = timezone.now()
    run.save()
    return run


def _detect(memory, engine, budget, run, place_new=True):
    facts, current_hashes = _load_facts(memory)
    min_dates = max(2, memory.promotion_threshold)
    word_groups = detection.detect(facts, min_dates=min_dates)
    if engine.provider in proposals.MODEL_PROVIDERS:
        try:
            model_groups, run.lessons_sent = _model_groups(memory, facts, engine, budget, place_new)
        except proposals.OverBudget as exc:
            raise DetectionOverBudget(f"{exc}. No candidate was changed.") from None
        except proposals.ProposalError as exc:
            raise DetectionError(f"{exc}. No candidate was changed.") from None
        found = proposals.merge(word_groups, model_groups, {f.id: f for f in facts}, min_dates=min_dates)
    else:
        found = [proposals.Proposed(group=g, found_by=PromotionCandidate.FoundBy.WORDS) for g in word_groups]
    current_groups = {tuple(p.group.lesson_ids) for p in found}
    coverage = _Coverage(
        c for c in PromotionCandidate.objects.filter(memory=memory, status__in=COVERING_STATUSES)
        if not (c.status == Status.PENDING and (_is_stale(c, current_hashes) or _outdated(c, current_groups)))
    )
    new = [p for p in found if not coverage.covers(_evidence(p.group))]
    # Check and word the proposals outside any transaction: a model call may take seconds.
    proposals_out = []
    if new:
        if engine.provider in proposals.MODEL_PROVIDERS:
            try:
                budget.check(proposals.estimate_checks(new, _texts([i for p in new for i in p.group.lesson_ids])),
                             f"checking and wording {len(new)} group{'s' if len(new) != 1 else ''}")
            except proposals.OverBudget as exc:
                raise DetectionOverBudget(f"{exc}. No candidate was changed.") from None
        checked = [(p, note) for p, note in _verified(memory, new, facts, engine, min_dates)
                   if not coverage.covers(_evidence(p.group))]
        words = {f.id: f.words for f in facts}
        grouped = [i for p, _ in checked for i in p.group.lesson_ids]
        members_by_id = {lesson.pk: (lesson, refs) for lesson, refs in _members(grouped, words)}
        for item, note in checked:
            members = [members_by_id[i] for i in item.group.lesson_ids]
            proposals_out.append((item, members, wording.propose(memory, members, engine=engine), note))
    return _store_detection(memory, proposals_out, current_hashes, current_groups, len(found))


def _supersede(candidate, now, reason):
    candidate.status = Status.SUPERSEDED
    candidate.decided_at = now
    candidate.reason = reason


@transaction.atomic
def _store_detection(memory, proposals, current_hashes, current_groups, group_count):
    # One detection at a time per memory, so two runs cannot propose the same group twice.
    Memory.objects.select_for_update().filter(pk=memory.pk).first()
    result = DetectionResult(groups=group_count)
    now = timezone.now()
    candidates = list(PromotionCandidate.objects.filter(memory=memory, status__in=COVERING_STATUSES))
    for candidate in candidates:
        if candidate.status != Status.PENDING:
            continue
        if _is_stale(candidate, current_hashes):
            _supersede(candidate, now, "Its supporting lessons changed after it was proposed.")
            result.superseded.append(candidate)
        elif _outdated(candidate, current_groups):
            _supersede(candidate, now, "Re-evaluated by the current detection: its lessons are not one group "
                                       "that says the same thing on enough dates.")
            result.superseded.append(candidate)
    coverage = _Coverage(candidates)
    # An earlier detector's candidate that is still a group found now is kept, under today's stamp.
    kept = [c for c in candidates if c.status == Status.PENDING and not _from_reflector(c) and c.detector != DETECTOR]
    for candidate in kept:
        candidate.detector = DETECTOR
    PromotionCandidate.objects.bulk_update(kept, ["detector"], batch_size=500)
    fresh = []
    for item, members, proposal, note in proposals:
        evidence = _evidence(item.group)
        if coverage.covers(evidence):
            continue
        fresh.append(_candidate(
            memory, proposal, evidence, members, item.group.distinct_dates, now, detector=DETECTOR,
            verification_note=note, found_by=item.found_by, proposal_reason=item.reason,
        ))
    created = _insert(memory, fresh, now)
    for candidate in created:
        for old in coverage.overlapping(candidate.evidence["lessons"]):
            if old.status == Status.PENDING:
                _supersede(old, now, f"Replaced by candidate #{candidate.pk}, which has new evidence.")
                result.superseded.append(old)
    PromotionCandidate.objects.bulk_update(result.superseded, ["status", "decided_at", "reason"], batch_size=500)
    result.created = created
    return result


def _candidate(memory, proposal, evidence, members, distinct_dates, now, **fields):
    return PromotionCandidate(
        memory=memory,
        text=proposal.text,
        category=proposal.category,
        refs=[r.as_text() for r in proposal.refs],
        evidence=evidence,
        fingerprint=_fingerprint(evidence),
        supporting_state={str(lesson.pk): {"hash": lesson.content_hash} for lesson, _ in members},
        distinct_dates=distinct_dates,
        engine=proposal.engine,
        engine_note=proposal.note,
        created_at=now,
        **fields,
    )


def _insert(memory, candidates, now):
    """Store new candidates and their supporting lessons in a few bulk queries."""
    created = PromotionCandidate.objects.bulk_create(candidates, batch_size=500)
    if created and created[0].pk is None:  # backends that do not return ids from bulk inserts
        created = list(PromotionCandidate.objects.filter(memory=memory, created_at=now).order_by("id"))
    Through = PromotionCandidate.supporting.through
    Through.objects.bulk_create(
        [Through(promotioncandidate_id=c.pk, lesson_id=i) for c in created for i in c.evidence["lessons"]],
        batch_size=2000,
    )
    return created


# --- running detection: one entry point for the button, the nightly sweep and new lessons --------

STATUS_SECONDS = 24 * 3600


def _status_key(memory_id):
    return f"promotions:detection:{memory_id}"


def _set_status(memory_id, state, message):
    cache.set(_status_key(memory_id), {"state": state, "message": message, "at": timezone.now()}, STATUS_SECONDS)


def detection_status(memory_ids):
    """{memory id: {"state": queued|running|done|failed, "message", "at"}} of recent detection runs."""
    found = cache.get_many([_status_key(i) for i in memory_ids])
    return {i: found[_status_key(i)] for i in memory_ids if _status_key(i) in found}


def detection_targets(memory=None, *, within=None):
    """The memories detection runs on: those of active personas (one, if asked for and active), among
    `within` (a Memory queryset: the memories the person asking may govern) when given."""
    qs = (Memory.objects.all() if within is None else within)
    qs = qs.filter(persona__is_active=True).select_related("persona", "project").order_by("id")
    return list(qs.filter(pk=memory.pk) if memory is not None else qs)


def promotion_detect_request(*, memory=None, within=None):
    """Queue detection for one memory or every active one, after the current transaction commits.

    Returns the memories queued. The run itself happens in a worker (promotion_detect_run), so a
    model's check of many groups never holds up a request.
    """
    from memory.promotions.tasks import detect_promotions

    targets = detection_targets(memory, within=within)
    for target in targets:
        _set_status(target.pk, "queued", "Detection is queued.")
        transaction.on_commit(lambda pk=target.pk: detect_promotions.delay(pk))
    return targets


def promotion_detect_run(*, memory_id, place_new=True):
    """Run detection for one memory as a job, recording its outcome for the inbox. Returns how many
    candidates it created (0 when the memory is gone, its persona inactive, or the run failed).

    place_new=False (the run after new lessons) uses the model's earlier groups without asking it to
    place the new lessons: that is left to the nightly run and "Detect now", one grouping call for a
    day's appends instead of one per append."""
    memory = Memory.objects.select_related("persona").filter(pk=memory_id, persona__is_active=True).first()
    if memory is None:
        return 0
    _set_status(memory_id, "running", "Detection is running.")
    try:
        result = promotion_detect(memory=memory, place_new=place_new)
    except DetectionError as exc:
        _set_status(memory_id, "failed", str(exc))
        return 0
    n, gone = len(result.created), len(result.superseded)
    message = f"Detection found {n} new candidate{'s' if n != 1 else ''}" + (f" and superseded {gone}." if gone else ".")
    run = result.run
    if run is not None and run.calls:
        message += (f" The model was called {run.calls} time{'s' if run.calls != 1 else ''} "
                    f"({run.tokens_in + run.tokens_out:,} tokens).")
    _set_status(memory_id, "done", message)
    return n


def reflection_propose(*, memory, text, category, lessons, refs, engine, run_id):
    """A pending candidate for a reflection of the observation pipeline, backed by its observations.

    Call inside the pipeline's transaction. The candidate is labelled as a reflection (evidence
    source and run), so the inbox does not present it as a lesson recurring on distinct dates.
    """
    evidence = {"lessons": sorted(l.pk for l in lessons), "confirmations": [], "source": REFLECTOR, "run": run_id}
    proposal = wording.Proposal(text=text, category=category, refs=[parse_ref(r) for r in refs],
                                engine=str(engine)[:40])
    candidate = _candidate(memory, proposal, evidence, [(l, ()) for l in lessons],
                           len({l.lesson_date for l in lessons}), timezone.now(), detector=REFLECTOR)
    (created,) = _insert(memory, [candidate], candidate.created_at)
    return created


def reflection_support(*, candidate, lessons):
    """More observations back a pending reflection: its evidence, supporting lessons and date count follow."""
    have = set(candidate.evidence.get("lessons", []))
    added = [l for l in lessons if l.pk not in have]
    if not added:
        return candidate
    candidate.evidence = {**candidate.evidence, "lessons": sorted(have | {l.pk for l in added})}
    candidate.supporting_state = {**candidate.supporting_state,
                                  **{str(l.pk): {"hash": l.content_hash} for l in added}}
    candidate.supporting.add(*added)
    candidate.distinct_dates = len(set(
        Lesson.objects.filter(pk__in=candidate.evidence["lessons"]).values_list("lesson_date", flat=True)))
    candidate.save(update_fields=["evidence", "supporting_state", "distinct_dates"])
    return candidate


def _describe_decision(candidate):
    who = candidate.decided_by_label or "someone"
    when = timezone.localtime(candidate.decided_at).strftime("%Y-%m-%d %H:%M") if candidate.decided_at else ""
    suffix = f" at {when}" if when else ""
    if candidate.status == Status.APPROVED:
        return f"This promotion was already approved by {who}{suffix}."
    if candidate.status == Status.REJECTED:
        return f"This promotion was already rejected by {who}{suffix}."
    if candidate.status == Status.REVERTED:
        return "This promotion was approved and then reverted; it cannot be decided again."
    return "This proposal was superseded by a newer one; review that one instead."


def _require_approver(actor, memory):
    from memory.access import can

    if actor.type != ActorType.USER or actor.user is None or not can(actor.user, APPROVE, memory):
        raise PermissionDenied("Only a signed-in person with the approver role can decide promotions.")


def _changed_lessons(candidate, lessons):
    by_id = {lesson.pk: lesson for lesson in lessons}
    problems = []
    for lesson_id, state in candidate.supporting_state.items():
        lesson = by_id.get(int(lesson_id))
        if lesson is None:
            problems.append(f"lesson {lesson_id} no longer exists")
        elif lesson.status == LessonStatus.DELETED and _from_reflector(candidate):
            continue
        elif lesson.status != LessonStatus.ACTIVE or lesson.tier != Tier.WORKING:
            problems.append(f"lesson {lesson_id} is now {lesson.status} ({lesson.tier})")
        elif lesson.content_hash != state.get("hash"):
            problems.append(f"lesson {lesson_id} was edited")
    return problems


def _highest_relevance(lessons):
    return Relevance.highest(lesson.relevance for lesson in lessons)


@transaction.atomic
def promotion_approve(*, candidate, actor, text=None, category=None, refs=None, reason=""):
    """Create the core lesson and retire its supporting lessons, as one revertible batch, exactly once.

    The candidate row is locked first, so of two approvers clicking together one creates the
    lesson and the other is told who already approved it.
    """
    candidate = PromotionCandidate.objects.select_for_update().select_related("memory").get(pk=candidate.pk)
    _require_approver(actor, candidate.memory)
    if candidate.status != Status.PENDING:
        raise AlreadyDecided(_describe_decision(candidate))
    memory = candidate.memory
    final_text = candidate.text if text is None else text.strip()
    final_category = candidate.category if category is None else category
    final_refs = candidate.refs if refs is None else refs
    # Checked before anything is written: the batch's label quotes the text.
    services.validate_lesson_fields(tier=Tier.CORE, category=final_category, text=final_text,
                                    relevance=Relevance.MEDIUM)
    edited = (final_text, final_category) != (candidate.text, candidate.category) or (
        refs is not None and [r.as_text() for r in services.clean_refs(final_refs)] != candidate.refs
    )
    supporting = list(
        Lesson.objects.select_for_update().filter(pk__in=[int(i) for i in candidate.supporting_state]).order_by("id")
    )
    problems = _changed_lessons(candidate, supporting)
    if problems:
        raise NeedsReview(
            "The supporting lessons changed since this was proposed (" + "; ".join(problems) + "). "
            "Review the refreshed proposal instead."
        )
    batch = services.batch_create(
        memory=memory, kind=ChangeBatch.Kind.PROMOTION, actor=actor, reason=reason,
        label=f"Promotion #{candidate.pk}: {final_text[:120]}",
    )
    core = services.lesson_create(
        memory=memory, tier=Tier.CORE, category=final_category, text=final_text, refs=final_refs,
        relevance=_highest_relevance(supporting), actor=actor, batch=batch, derived_from=supporting,
        lesson_date=timezone.localdate(), bump=False,
    )
    for lesson in supporting:
        if lesson.status != LessonStatus.ACTIVE:
            continue  # a reflection's observation already pruned from working memory
        services.lesson_promote(lesson=lesson, actor=actor, batch=batch, reason=f"Promoted into core lesson {core.pk}")
    now = timezone.now()
    updated = PromotionCandidate.objects.filter(pk=candidate.pk, status=Status.PENDING).update(
        status=Status.APPROVED, decided_by=actor.user, decided_by_label=actor.label[:200], decided_at=now,
        core_lesson=core, batch=batch, edited=edited, reason=reason,
    )
    if updated != 1:  # belt and braces for databases without row locks
        raise AlreadyDecided("This promotion was already decided by someone else.")
    services.memory_bump_version(memory)
    candidate.refresh_from_db()
    usage = core_usage_after(memory)
    return ApprovalResult(candidate=candidate, core_lesson=core, core_chars=usage, core_budget=memory.core_char_budget)


@transaction.atomic
def promotion_reject(*, candidate, actor, reason):
    """Record who rejected the proposal and why; its lessons stay in working memory."""
    _require_approver(actor, candidate.memory)
    reason = (reason or "").strip()
    if not reason:
        raise ValidationError({"reason": "Say why the proposal is rejected; the reason is kept with the decision."})
    reason = check_text(reason, field="reason", multiline=True, max_chars=services.REASON_MAX_CHARS)
    candidate = PromotionCandidate.objects.select_for_update().get(pk=candidate.pk)
    if candidate.status != Status.PENDING:
        raise AlreadyDecided(_describe_decision(candidate))
    candidate.status = Status.REJECTED
    candidate.decided_by = actor.user
    candidate.decided_by_label = actor.label[:200]
    candidate.decided_at = timezone.now()
    candidate.reason = reason
    candidate.save(update_fields=["status", "decided_by", "decided_by_label", "decided_at", "reason"])
    return candidate


def on_batch_reverted(sender, batch, revert_batch, **kwargs):
    """Reverting an approval's batch brings the working lessons back and retires the core lesson."""
    PromotionCandidate.objects.filter(batch=batch, status=Status.APPROVED).update(
        status=Status.REVERTED, revert_batch=revert_batch
    )
