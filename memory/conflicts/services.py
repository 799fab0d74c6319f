"""Writes of the conflict feature: detection runs and reviewers' decisions.

Lesson writes go through the write path (memory.services): keeping the newer lesson supersedes the
older one, keeping the older deletes the newer (softly), editing one and keeping it rewords it first;
each decision is one batch that revert undoes.
"""

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import date
from types import SimpleNamespace

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from memory import services
from memory.conflicts import detection, expiry, model, neighbours
from memory.conflicts.expiries import expiry_proposals_announce
from memory.jobs import enqueue_on_commit
from memory.models import (
    ChangeBatch,
    ExpiryProposal,
    Lesson,
    LessonConflict,
    LessonStatus,
    Memory,
    conflict_fingerprint,
)
from memory.promotions.detection import cyclic_gc_paused
from memory.promotions.detection_runs import detection_targets
from memory.selectors import unexpired
from memory.signals import review_event


def _announce(event_type: str, conflicts: list[LessonConflict], *, decision: str = "", by: str = "") -> None:
    """The event a team hears (an outbox row in the caller's transaction): conflicts of one memory
    wait, or conflicts were decided. Lesson text goes only to endpoints that ask for it."""
    memory_ids = {c.memory_id for c in conflicts}
    data: dict = {
        "count": len(conflicts),
        "items": [
            {"kind": "conflict", "id": c.pk, "relation": c.relation, "url": reverse("conflicts:detail", args=[c.pk])}
            for c in conflicts
        ],
    }
    if decision:
        data.update(decision=decision, by=by)
    review_event.send(
        sender=LessonConflict,
        event_type=event_type,
        memory_id=conflicts[0].memory_id if len(memory_ids) == 1 else None,
        team_id=None if len(memory_ids) == 1 else conflicts[0].memory.project.team_id,
        data=data,
    )


@dataclass(slots=True)
class ActiveLesson:
    """What detection reads of a lesson (slots: a full pass over a large memory holds many)."""

    id: int
    text: str
    lesson_date: date
    tier: str
    expires_on: date | None
    expires_when: str


def _active_lessons(memory: Memory, ids: Iterable[int] | None = None) -> list[ActiveLesson]:
    """The memory's active lessons (those of `ids` when given), read in chunks, not all rows at once."""
    lessons = Lesson.objects.filter(memory=memory, status=LessonStatus.ACTIVE)
    columns = ("id", "text", "lesson_date", "tier", "expires_on", "expires_when")
    if ids is None:
        return [ActiveLesson(*row) for row in lessons.values_list(*columns).iterator(chunk_size=5000)]
    ids = sorted(set(ids))
    return [
        ActiveLesson(*row)
        for start in range(0, len(ids), 5000)
        for row in lessons.filter(pk__in=ids[start : start + 5000]).values_list(*columns)
    ]


def _batch_neighbourhood(memory: Memory, lesson_ids: Iterable[int]) -> tuple[list[ActiveLesson], dict, int]:
    """(lessons, frequency, total) for an incremental pass: the batch's active lessons and the
    lessons detection may compare them with, found through the search index (neighbours.py), with
    how many lessons of the memory hold each of the batch's words and how many the memory holds.
    A few statements, whatever the size of the memory."""
    batch = _active_lessons(memory, lesson_ids)
    words: dict[str, str] = {}
    for lesson in batch:
        for term, word in detection.significant_words(lesson.text).items():
            words.setdefault(term, word)
    holding = neighbours.lessons_holding(memory.pk, words)
    frequency = {term: len(ids) for term, ids in holding.items()}
    wanted: set[int] = set()
    for lesson in batch:
        terms = detection.significant(lesson.text)
        counts = {t: frequency.get(t) or 1 for t in terms}
        for term in detection.looked_through(terms, counts):
            wanted.update(holding.get(term, ()))
    wanted.difference_update(lesson.id for lesson in batch)
    total = Lesson.objects.filter(memory=memory, status=LessonStatus.ACTIVE).count()
    return batch + _active_lessons(memory, wanted), frequency, total


def conflicts_detect_request(*, memory: Memory | None = None, within=None) -> list[Memory]:
    """ "Check now": queue a full detection pass for one memory or for every memory of an active
    persona among `within` (the memories the person asking may govern), after the current
    transaction commits. Returns the memories queued."""
    targets = detection_targets(memory, within=within)
    for target in targets:
        enqueue_on_commit("memory.conflicts.detect", target.pk, None)
    return targets


@transaction.atomic
def conflicts_detect(*, memory: Memory, lesson_ids: Iterable[int] | None = None) -> tuple[int, int]:
    """Compare `lesson_ids` (every active lesson when None) with their neighbours in the memory and
    store what is new: conflicts not proposed before (by fingerprint, whatever their status) —
    among them a temporary lesson whose condition one of the lessons says has happened — and
    expiry proposals for lessons that have none. Returns (conflicts, expiry proposals) created.

    With `lesson_ids`, only those lessons and their candidate neighbours are read (a batch costs what
    its neighbours cost); without, every active lesson of the memory."""
    lesson_ids = None if lesson_ids is None else list(lesson_ids)
    with cyclic_gc_paused():
        if lesson_ids is None:
            lessons, frequency, total = _active_lessons(memory), None, None
        else:
            lessons, frequency, total = _batch_neighbourhood(memory, lesson_ids)
        by_id = {lesson.id: lesson for lesson in lessons}
        new_ids = None if lesson_ids is None else [i for i in lesson_ids if i in by_id]
        findings = detection.detect(lessons, new_ids, frequency=frequency, total=total)
    fingerprints = {
        finding: conflict_fingerprint(by_id[finding.older_id].text, by_id[finding.newer_id].text)
        for finding in findings
    }
    wanted = sorted(set(fingerprints.values()))
    known = {
        fingerprint
        for start in range(0, len(wanted), 5000)
        for fingerprint in LessonConflict.objects.filter(
            memory=memory, fingerprint__in=wanted[start : start + 5000]
        ).values_list("fingerprint", flat=True)
    }
    conflicts = _unknown_pairs(memory, fingerprints, known)
    new_lessons = [by_id[i] for i in (new_ids if new_ids is not None else by_id)]
    conflicts += _conditions_met(memory=memory, lessons=new_lessons, known=known)
    LessonConflict.objects.bulk_create(conflicts)
    if conflicts and conflicts[0].pk is not None:
        _announce("review.waiting", conflicts)

    candidates = [lesson for lesson in new_lessons if lesson.expires_on is None and not lesson.expires_when]
    named_end = expiry.detect_expiry(candidates)
    proposed = set(
        ExpiryProposal.objects.filter(lesson_id__in=[found.lesson_id for found in named_end]).values_list(
            "lesson_id", flat=True
        )
    )
    proposals = [
        ExpiryProposal(
            memory=memory,
            lesson_id=found.lesson_id,
            expires_on=found.expires_on,
            expires_when=found.expires_when[:300],
            evidence=found.evidence,
            engine=detection.ENGINE,
        )
        for found in named_end
        if found.lesson_id not in proposed
    ]
    ExpiryProposal.objects.bulk_create(proposals)
    expiry_proposals_announce(proposals)
    if conflicts:
        services.memory_bump_version(memory)  # compiled memory now marks the older lines
    model.conflicts_model_request(memory=memory, lesson_ids=new_ids)  # with a model engine: its pass, after commit
    return len(conflicts), len(proposals)


def _conditions_met(*, memory: Memory, lessons: list, known: set[str]) -> list[LessonConflict]:
    """Conflicts (not saved) for the temporary lessons of `memory` whose condition (expires_when)
    one of `lessons` says has happened: the later lesson supersedes, so keeping it retires the
    temporary one. The temporary lessons still served are read in one query; `known` fingerprints
    are skipped and the new ones added."""
    temporary = [
        SimpleNamespace(id=i, text=t, lesson_date=d, expires_when=ew)
        for i, t, d, ew in Lesson.objects.filter(unexpired(), memory=memory, status=LessonStatus.ACTIVE)
        .exclude(expires_when="")
        .values_list("id", "text", "lesson_date", "expires_when")
    ]
    texts = {lesson.id: lesson.text for lesson in [*temporary, *lessons]}
    met = {
        found: conflict_fingerprint(texts[found.older_id], texts[found.newer_id])
        for found in expiry.conditions_met(lessons, temporary)
    }
    if met:
        known |= set(
            LessonConflict.objects.filter(memory=memory, fingerprint__in=set(met.values())).values_list(
                "fingerprint", flat=True
            )
        )
    return _unknown_pairs(memory, met, known)


def _unknown_pairs(memory: Memory, found: dict, known: set[str]) -> list[LessonConflict]:
    """Conflicts (not saved) for the pairs of `found` ({finding: fingerprint}) whose fingerprint is
    not `known`; their fingerprints are added to it, so a pair found twice is proposed once."""
    conflicts = []
    for finding, fingerprint in found.items():
        if fingerprint in known:
            continue
        known.add(fingerprint)
        conflicts.append(
            LessonConflict(
                memory=memory,
                older_id=finding.older_id,
                newer_id=finding.newer_id,
                relation=finding.relation,
                engine=detection.ENGINE,
                evidence=finding.evidence,
                fingerprint=fingerprint,
            )
        )
    return conflicts


def _decide(
    conflict: LessonConflict, *, status: str, decision: str, actor: services.Actor, batch=None, announce: bool = True
) -> LessonConflict:
    conflict.status, conflict.decision, conflict.batch = status, decision, batch
    conflict.decided_by, conflict.decided_at = actor.user, timezone.now()
    conflict.save(update_fields=["status", "decision", "batch", "decided_by", "decided_at"])
    if announce:
        _announce("review.decided", [conflict], decision=decision.replace("_", " "), by=actor.label)
    return conflict


def _locked_pending(conflict: LessonConflict) -> LessonConflict:
    conflict = LessonConflict.objects.select_for_update().select_related("older", "newer", "memory").get(pk=conflict.pk)
    if conflict.status != LessonConflict.Status.PENDING:
        raise ValidationError(f"this conflict is already {conflict.get_status_display().lower()}")
    return conflict


def _decide_in_batch(
    conflict: LessonConflict,
    *,
    actor: services.Actor,
    reason: str,
    label: str,
    decision: str,
    write: Callable[[LessonConflict, ChangeBatch], None],
    announce: bool,
    announced_as: str = "",
) -> LessonConflict:
    """The shape every keeping decision shares: lock the conflict while it is pending, carry out
    `write(conflict, batch)` in one new batch (what revert undoes), then record the decision."""
    conflict = _locked_pending(conflict)
    for side, lesson in (("older", conflict.older), ("newer", conflict.newer)):
        if lesson.status != LessonStatus.ACTIVE:
            raise ValidationError(
                f"the {side} lesson (#{lesson.pk}) is {lesson.get_status_display().lower()} since this conflict "
                "was found; restore it before deciding"
            )
    batch = services.batch_create(
        memory=conflict.memory, kind=ChangeBatch.Kind.MANUAL, actor=actor, label=label, reason=reason
    )
    write(conflict, batch)
    conflict = _decide(
        conflict, status=LessonConflict.Status.RESOLVED, decision=decision, actor=actor, batch=batch, announce=False
    )
    if announce:
        _announce("review.decided", [conflict], decision=announced_as or decision.replace("_", " "), by=actor.label)
    return conflict


def _retire_older(conflict: LessonConflict, batch: ChangeBatch, actor: services.Actor) -> None:
    services.lesson_supersede(lesson=conflict.older, superseded_by=conflict.newer, actor=actor, batch=batch)


def _retire_newer(conflict: LessonConflict, batch: ChangeBatch, actor: services.Actor) -> None:
    services.lesson_delete(lesson=conflict.newer, actor=actor, batch=batch)


@transaction.atomic
def conflict_keep_newer(
    *, conflict: LessonConflict, actor: services.Actor, reason: str = "", announce: bool = True
) -> LessonConflict:
    """The newer lesson holds: the older is retired as superseded by it, in one revertible batch."""
    return _decide_in_batch(
        conflict,
        actor=actor,
        reason=reason,
        label="Conflict: kept the newer lesson",
        decision=LessonConflict.Decision.KEEP_NEWER,
        write=lambda c, batch: _retire_older(c, batch, actor),
        announce=announce,
    )


@transaction.atomic
def conflict_keep_older(
    *, conflict: LessonConflict, actor: services.Actor, reason: str = "", announce: bool = True
) -> LessonConflict:
    """The older lesson holds: the newer is deleted (softly, restorable), in one revertible batch."""
    return _decide_in_batch(
        conflict,
        actor=actor,
        reason=reason,
        label="Conflict: kept the older lesson",
        decision=LessonConflict.Decision.KEEP_OLDER,
        write=lambda c, batch: _retire_newer(c, batch, actor),
        announce=announce,
    )


KEEP_SIDES = ("newer", "older")


@transaction.atomic
def conflict_edit_and_keep(
    *,
    conflict: LessonConflict,
    keep: str,
    text: str,
    actor: services.Actor,
    category: str | None = None,
    refs: str | None = None,
    reason: str = "",
    announce: bool = True,
) -> LessonConflict:
    """One lesson holds once reworded: `keep` ("newer" or "older") gets the reviewer's text (and
    category and refs, when given), the other is retired as keep_newer / keep_older retire it, all
    in one revertible batch. The text is checked as any lesson edit is; on an error nothing changes."""
    if keep not in KEEP_SIDES:
        raise ValidationError({"keep": f"keep must be newer or older, not {str(keep)[:20]!r}"})

    def write(locked: LessonConflict, batch: ChangeBatch) -> None:
        kept = locked.newer if keep == "newer" else locked.older
        services.lesson_update(lesson=kept, actor=actor, batch=batch, text=text, category=category, refs=refs)
        if keep == "newer":
            _retire_older(locked, batch, actor)
        else:
            _retire_newer(locked, batch, actor)

    decision = LessonConflict.Decision.KEEP_NEWER if keep == "newer" else LessonConflict.Decision.KEEP_OLDER
    return _decide_in_batch(
        conflict,
        actor=actor,
        reason=reason,
        label=f"Conflict: edited the {keep} lesson, then kept it",
        decision=decision,
        write=write,
        announce=announce,
        announced_as=f"keep {keep}, edited",
    )


@transaction.atomic
def conflict_keep_both(*, conflict: LessonConflict, actor: services.Actor, announce: bool = True) -> LessonConflict:
    """Both lessons hold: the conflict is dismissed and its pair (by fingerprint) never proposed again."""
    conflict = _locked_pending(conflict)
    conflict = _decide(
        conflict, status=LessonConflict.Status.DISMISSED, decision="keep_both", actor=actor, announce=announce
    )
    services.memory_bump_version(conflict.memory)  # the older line is no longer marked
    return conflict


@transaction.atomic
def conflict_reopen(*, conflict: LessonConflict, actor: services.Actor) -> LessonConflict:
    """Undo "keep both", which changed no lesson and so has no batch to revert: the conflict waits
    for review again (and the older line is marked again). A resolved conflict is reopened by
    reverting its decision's batch instead."""
    conflict = LessonConflict.objects.select_for_update().select_related("memory").get(pk=conflict.pk)
    if conflict.status != LessonConflict.Status.DISMISSED:
        raise ValidationError(
            "only a conflict whose lessons were both kept is reopened here"
            + ("; revert its decision's batch in the memory's history instead" if conflict.batch_id else "")
        )
    conflict.status, conflict.decision = LessonConflict.Status.PENDING, ""
    conflict.decided_by, conflict.decided_at = None, None
    conflict.save(update_fields=["status", "decision", "decided_by", "decided_at"])
    services.memory_bump_version(conflict.memory)  # the older line is marked again
    return conflict


def conflicts_follow_revert(*, batch: ChangeBatch) -> int:
    """A decision's batch was reverted: its conflict is pending again."""
    return LessonConflict.objects.filter(batch=batch).update(
        status=LessonConflict.Status.PENDING, decision="", batch=None, decided_by=None, decided_at=None
    )


DECISIONS = {"keep_newer": conflict_keep_newer, "keep_older": conflict_keep_older, "keep_both": conflict_keep_both}


def conflicts_bulk_decide(
    *, conflicts: Iterable[LessonConflict], decision: str, actor: services.Actor, reason: str = ""
) -> tuple[list[LessonConflict], list[str]]:
    """One decision for many conflicts, each in its own batch (so each reverts on its own). A conflict
    that can no longer be decided (decided meanwhile, a protected lesson) is set aside with the reason.
    Returns ([the conflicts decided], [refusals])."""
    service = DECISIONS.get(decision)
    if service is None:
        raise ValidationError("Choose keep the newer, keep the older or keep both.")
    done: list[LessonConflict] = []
    refused: list[str] = []
    for conflict in conflicts:
        kwargs = {} if service is conflict_keep_both else {"reason": reason}
        try:
            done.append(service(conflict=conflict, actor=actor, announce=False, **kwargs))
        except (ValidationError, PermissionDenied) as exc:
            refused.append(f"Conflict {conflict.pk}: {'; '.join(getattr(exc, 'messages', [str(exc)]))}")
    by_team: dict[int | None, list[LessonConflict]] = {}
    for conflict in LessonConflict.objects.filter(pk__in=[c.pk for c in done]).select_related("memory__project"):
        by_team.setdefault(conflict.memory.project.team_id, []).append(conflict)
    with transaction.atomic():  # one event per team: an endpoint never sees another team's items
        for team_conflicts in by_team.values():
            _announce("review.decided", team_conflicts, decision=decision.replace("_", " "), by=actor.label)
    return done, refused
