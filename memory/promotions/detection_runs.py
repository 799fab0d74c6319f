"""Detection runs: find groups of working lessons worth promoting and keep them as pending candidates.

One entry point for the "Detect now" button, the nightly sweep and new lessons (promotion_detect_request
queues, promotion_detect_run runs in a worker and records its outcome for the inbox).
"""

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any

from django.core.cache import cache
from django.db import transaction
from django.db.models import Case, DateField, F, QuerySet, Value, When
from django.utils import timezone

from memory.engines.base import Engine, EngineError
from memory.engines.registry import get_engine
from memory.jobs import enqueue_on_commit
from memory.models import (
    DetectionRun,
    Lesson,
    LessonConfirmation,
    LessonRef,
    LessonStatus,
    Memory,
    PromotionCandidate,
    Tier,
)
from memory.promotions import detection, proposals, verification, wording
from memory.promotions.candidates import (
    COVERING_STATUSES,
    DETECTOR,
    PromotionError,
    Status,
    evidence_of,
    from_reflector,
    insert_candidates,
    new_candidate,
)
from memory.promotions.placements import lesson_rows, model_groups
from memory.refs import Ref


class DetectionError(PromotionError):
    """Detection could not finish (the model's check failed or was unusable); nothing was changed."""


class DetectionOverBudget(DetectionError):
    """The run would have used more model tokens than the persona's detection budget."""


@dataclass
class DetectionResult:
    created: list[PromotionCandidate] = field(default_factory=list)
    superseded: list[PromotionCandidate] = field(default_factory=list)
    groups: int = 0
    run: DetectionRun | None = None


class _Coverage:
    """Which candidates already cover a group's evidence, found through the group's first lesson."""

    def __init__(self, candidates: Iterable[PromotionCandidate]) -> None:
        self.by_lesson: defaultdict[int, list[tuple[PromotionCandidate, set[int], set[int]]]] = defaultdict(list)
        for candidate in candidates:
            self.add(candidate)

    def add(self, candidate: PromotionCandidate) -> None:
        entry = (
            candidate,
            set(candidate.evidence.get("lessons", ())),
            set(candidate.evidence.get("confirmations", ())),
        )
        for lesson_id in entry[1]:
            self.by_lesson[lesson_id].append(entry)

    def covers(self, evidence: dict[str, Any]) -> bool:
        lessons, confirmations = set(evidence["lessons"]), set(evidence["confirmations"])
        return any(
            lessons <= covered_lessons and confirmations <= covered_confirmations
            for candidate, covered_lessons, covered_confirmations in self.by_lesson.get(evidence["lessons"][0], ())
            if candidate.status in COVERING_STATUSES
        )

    def overlapping(self, lesson_ids: Iterable[int]) -> list[PromotionCandidate]:
        seen: dict[int, PromotionCandidate] = {}
        for lesson_id in lesson_ids:
            for candidate, _, _ in self.by_lesson.get(lesson_id, ()):
                seen[candidate.pk] = candidate
        return list(seen.values())


def _load_facts(memory: Memory) -> tuple[list[detection.LessonFacts], dict[int, str]]:
    rows = list(
        Lesson.objects.filter(memory=memory, tier=Tier.WORKING, status=LessonStatus.ACTIVE)
        .order_by("id")
        # A lesson imported without a date only carries the import day for ordering: it is no date seen.
        .annotate(
            seen_on=Case(When(undated=True, then=Value(None)), default=F("lesson_date"), output_field=DateField())
        )
        .values_list("id", "text", "content_hash", "seen_on")
    )
    paths: defaultdict[int, list[str]] = defaultdict(list)
    for lesson_id, path in LessonRef.objects.filter(
        lesson__memory=memory, lesson__tier=Tier.WORKING, lesson__status=LessonStatus.ACTIVE
    ).values_list("lesson_id", "path"):
        paths[lesson_id].append(path)
    confirmations: defaultdict[int, list[tuple[int, date]]] = defaultdict(list)
    for conf_id, lesson_id, day in LessonConfirmation.objects.filter(
        lesson__memory=memory, lesson__tier=Tier.WORKING, lesson__status=LessonStatus.ACTIVE
    ).values_list("id", "lesson_id", "confirmed_on"):
        confirmations[lesson_id].append((conf_id, day))
    current = {r[0]: r[2] for r in rows}
    return detection.facts_from_rows(rows, paths, confirmations), current


def _outdated(candidate: PromotionCandidate, current_groups: set[tuple[int, ...]]) -> bool:
    """A pending candidate of an earlier detector that is not one of the groups found now."""
    if from_reflector(candidate) or candidate.detector == DETECTOR:
        return False
    return tuple(sorted(candidate.evidence.get("lessons", ()))) not in current_groups


def _is_stale(candidate: PromotionCandidate, current_hashes: dict[int, str]) -> bool:
    """A pending candidate whose supporting lessons are no longer active working lessons as proposed."""
    for lesson_id, state in candidate.supporting_state.items():
        current = current_hashes.get(int(lesson_id))
        if current is None and from_reflector(candidate):
            continue
        if current != state.get("hash"):
            return True
    return False


def _members(
    lesson_ids: Sequence[int], words: dict[int, frozenset[str]] | None = None
) -> list[tuple[wording.Member, list[Ref]]]:
    """Light records of the grouped lessons and their refs: two queries, no model instances."""
    refs: defaultdict[int, list[Ref]] = defaultdict(list)
    for lesson_id, path, start, end in (
        LessonRef.objects.filter(lesson_id__in=lesson_ids)
        .order_by("lesson_id", "position", "id")
        .values_list("lesson_id", "path", "start_line", "end_line")
    ):
        refs[lesson_id].append(Ref(path=path, start_line=start, end_line=end))
    return [
        (
            wording.Member(
                pk=pk, text=text, category=category, lesson_date=day, content_hash=key, words=(words or {}).get(pk)
            ),
            refs[pk],
        )
        for pk, text, category, day, key in Lesson.objects.filter(pk__in=lesson_ids)
        .order_by("id")
        .values_list("id", "text", "category", "lesson_date", "content_hash")
    ]


def _engine_for(memory: Memory, engine: Engine | None) -> Engine:
    if engine is not None:
        return engine
    try:
        return get_engine(memory.persona, memory=memory)
    except EngineError as exc:
        raise DetectionError(f"Detection could not start: {exc}. No candidate was changed.") from None


def _texts(lesson_ids: Sequence[int]) -> dict[int, str]:
    return {pk: text for pk, (text,) in lesson_rows(lesson_ids, "text").items()}


def _verified(
    memory: Memory,
    proposed: list[proposals.Proposed],
    facts: Sequence[detection.LessonFacts],
    engine: Engine,
    min_dates: int,
) -> list[tuple[proposals.Proposed, str]]:
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


def _run_budget(memory: Memory, engine: Engine) -> proposals.Budget:
    limit = memory.persona.detection_token_budget if memory.persona_id else None
    return proposals.Budget(limit, getattr(engine, "recorder", None))


def promotion_detect(*, memory: Memory, engine: Engine | None = None, place_new: bool = True) -> DetectionResult:
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
        run.status = (
            DetectionRun.Status.OVER_BUDGET if isinstance(exc, DetectionOverBudget) else DetectionRun.Status.FAILED
        )
        run.message = str(exc)
        _finish_run(run, budget)
        raise
    n = len(result.created)
    run.status = DetectionRun.Status.DONE
    run.created = n
    run.message = f"{n} new candidate{'s' if n != 1 else ''}, {len(result.superseded)} superseded."
    result.run = _finish_run(run, budget)
    return result


def _finish_run(run: DetectionRun, budget: proposals.Budget) -> DetectionRun:
    if budget.recorder is not None:
        run.calls, run.tokens_in, run.tokens_out = budget.recorder.totals(budget.since)
    run.finished_at = timezone.now()
    run.save()
    return run


def _detect(
    memory: Memory, engine: Engine, budget: proposals.Budget, run: DetectionRun, place_new: bool = True
) -> DetectionResult:
    min_dates = max(2, memory.promotion_threshold)
    with detection.cyclic_gc_paused():
        facts, current_hashes = _load_facts(memory)
        word_groups = detection.detect(facts, min_dates=min_dates)
    if engine.provider in proposals.MODEL_PROVIDERS:
        try:
            by_model, run.lessons_sent = model_groups(memory, facts, engine, budget, place_new)
        except proposals.OverBudget as exc:
            raise DetectionOverBudget(f"{exc}. No candidate was changed.") from None
        except proposals.ProposalError as exc:
            raise DetectionError(f"{exc}. No candidate was changed.") from None
        found = proposals.merge(word_groups, by_model, {f.id: f for f in facts}, min_dates=min_dates)
    else:
        found = [proposals.Proposed(group=g, found_by=PromotionCandidate.FoundBy.WORDS) for g in word_groups]
    current_groups = {tuple(p.group.lesson_ids) for p in found}
    coverage = _Coverage(
        c
        for c in PromotionCandidate.objects.filter(memory=memory, status__in=COVERING_STATUSES)
        if not (c.status == Status.PENDING and (_is_stale(c, current_hashes) or _outdated(c, current_groups)))
    )
    new = [p for p in found if not coverage.covers(evidence_of(p.group))]
    # Check and word the proposals outside any transaction: a model call may take seconds.
    proposals_out: list[tuple[proposals.Proposed, list[Any], wording.Proposal, str]] = []
    if new:
        if engine.provider in proposals.MODEL_PROVIDERS:
            try:
                budget.check(
                    proposals.estimate_checks(new, _texts([i for p in new for i in p.group.lesson_ids])),
                    f"checking and wording {len(new)} group{'s' if len(new) != 1 else ''}",
                )
            except proposals.OverBudget as exc:
                raise DetectionOverBudget(f"{exc}. No candidate was changed.") from None
        checked = [
            (p, note)
            for p, note in _verified(memory, new, facts, engine, min_dates)
            if not coverage.covers(evidence_of(p.group))
        ]
        words = {f.id: f.words for f in facts}
        grouped = [i for p, _ in checked for i in p.group.lesson_ids]
        members_by_id = {lesson.pk: (lesson, refs) for lesson, refs in _members(grouped, words)}
        for item, note in checked:
            members = [members_by_id[i] for i in item.group.lesson_ids]
            proposals_out.append((item, members, wording.propose(memory, members, engine=engine), note))
    return _store_detection(memory, proposals_out, current_hashes, current_groups, len(found))


def _supersede(candidate: PromotionCandidate, now: datetime, reason: str) -> None:
    candidate.status = Status.SUPERSEDED
    candidate.decided_at = now
    candidate.reason = reason


@transaction.atomic
def _store_detection(
    memory: Memory,
    proposals: list[tuple[proposals.Proposed, list[Any], wording.Proposal, str]],
    current_hashes: dict[int, str],
    current_groups: set[tuple[int, ...]],
    group_count: int,
) -> DetectionResult:
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
            _supersede(
                candidate,
                now,
                "Re-evaluated by the current detection: its lessons are not one group "
                "that says the same thing on enough dates.",
            )
            result.superseded.append(candidate)
    coverage = _Coverage(candidates)
    # An earlier detector's candidate that is still a group found now is kept, under today's stamp.
    kept = [c for c in candidates if c.status == Status.PENDING and not from_reflector(c) and c.detector != DETECTOR]
    for candidate in kept:
        candidate.detector = DETECTOR
    PromotionCandidate.objects.bulk_update(kept, ["detector"], batch_size=500)
    fresh: list[PromotionCandidate] = []
    for item, members, proposal, note in proposals:
        evidence = evidence_of(item.group)
        if coverage.covers(evidence):
            continue
        fresh.append(
            new_candidate(
                memory,
                proposal,
                evidence,
                members,
                item.group.distinct_dates,
                now,
                detector=DETECTOR,
                verification_note=note,
                found_by=item.found_by,
                proposal_reason=item.reason,
            )
        )
    created = insert_candidates(memory, fresh, now)
    for candidate in created:
        for old in coverage.overlapping(candidate.evidence["lessons"]):
            if old.status == Status.PENDING:
                _supersede(old, now, f"Replaced by candidate #{candidate.pk}, which has new evidence.")
                result.superseded.append(old)
    PromotionCandidate.objects.bulk_update(result.superseded, ["status", "decided_at", "reason"], batch_size=500)
    result.created = created
    return result


# --- running detection: one entry point for the button, the nightly sweep and new lessons --------

STATUS_SECONDS = 24 * 3600


def _status_key(memory_id: int) -> str:
    return f"promotions:detection:{memory_id}"


def _set_status(memory_id: int, state: str, message: str) -> None:
    cache.set(_status_key(memory_id), {"state": state, "message": message, "at": timezone.now()}, STATUS_SECONDS)


def detection_status(memory_ids: Iterable[int]) -> dict[int, dict[str, Any]]:
    """{memory id: {"state": queued|running|done|failed, "message", "at"}} of recent detection runs."""
    found = cache.get_many([_status_key(i) for i in memory_ids])
    return {i: found[_status_key(i)] for i in memory_ids if _status_key(i) in found}


def detection_targets(memory: Memory | None = None, *, within: QuerySet[Memory] | None = None) -> list[Memory]:
    """The memories detection runs on: those of active personas (one, if asked for and active), among
    `within` (a Memory queryset: the memories the person asking may govern) when given."""
    qs = Memory.objects.all() if within is None else within
    qs = qs.filter(persona__is_active=True).select_related("persona", "project").order_by("id")
    return list(qs.filter(pk=memory.pk) if memory is not None else qs)


def promotion_detect_request(*, memory: Memory | None = None, within: QuerySet[Memory] | None = None) -> list[Memory]:
    """Queue detection for one memory or every active one, after the current transaction commits.

    Returns the memories queued. The run itself happens in a worker (promotion_detect_run), so a
    model's check of many groups never holds up a request.
    """
    targets = detection_targets(memory, within=within)
    for target in targets:
        _set_status(target.pk, "queued", "Detection is queued.")
        enqueue_on_commit("memory.promotions.detect", target.pk)
    return targets


def promotion_detect_run(*, memory_id: int, place_new: bool = True) -> int:
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
    message = f"Detection found {n} new candidate{'s' if n != 1 else ''}" + (
        f" and superseded {gone}." if gone else "."
    )
    run = result.run
    if run is not None and run.calls:
        message += (
            f" The model was called {run.calls} time{'s' if run.calls != 1 else ''} "
            f"({run.tokens_in + run.tokens_out:,} tokens)."
        )
    _set_status(memory_id, "done", message)
    return n
