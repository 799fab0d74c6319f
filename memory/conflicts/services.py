"""Writes of the conflict feature: detection runs and reviewers' decisions.

Lesson writes go through the write path (memory.services): keeping the newer lesson supersedes the
older one, keeping the older deletes the newer (softly), each in one batch that revert undoes.
"""

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from memory import services
from memory.conflicts import detection, expiry, neighbours
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


@transaction.atomic
def conflicts_detect(*, memory: Memory, lesson_ids: Iterable[int] | None = None) -> tuple[int, int]:
    """Compare `lesson_ids` (every active lesson when None) with their neighbours in the memory and
    store what is new: conflicts not proposed before (by fingerprint, whatever their status) and
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
    conflicts = []
    for finding, fingerprint in fingerprints.items():
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
    LessonConflict.objects.bulk_create(conflicts)
    if conflicts and conflicts[0].pk is not None:
        _announce("review.waiting", conflicts)

    candidates = [by_id[i] for i in (new_ids if new_ids is not None else by_id)]
    candidates = [lesson for lesson in candidates if lesson.expires_on is None and not lesson.expires_when]
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
    if conflicts:
        services.memory_bump_version(memory)  # compiled memory now marks the older lines
    return len(conflicts), len(proposals)


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
    conflict = LessonConflict.objects.select_for_update().select_related("older", "newer").get(pk=conflict.pk)
    if conflict.status != LessonConflict.Status.PENDING:
        raise ValidationError(f"this conflict is already {conflict.get_status_display().lower()}")
    return conflict


@transaction.atomic
def conflict_keep_newer(
    *, conflict: LessonConflict, actor: services.Actor, reason: str = "", announce: bool = True
) -> LessonConflict:
    """The newer lesson holds: the older is retired as superseded by it, in one revertible batch."""
    conflict = _locked_pending(conflict)
    batch = services.batch_create(
        memory=conflict.memory,
        kind=ChangeBatch.Kind.MANUAL,
        actor=actor,
        label="Conflict: kept the newer lesson",
        reason=reason,
    )
    services.lesson_supersede(lesson=conflict.older, superseded_by=conflict.newer, actor=actor, batch=batch)
    return _decide(
        conflict,
        status=LessonConflict.Status.RESOLVED,
        decision="keep_newer",
        actor=actor,
        batch=batch,
        announce=announce,
    )


@transaction.atomic
def conflict_keep_older(
    *, conflict: LessonConflict, actor: services.Actor, reason: str = "", announce: bool = True
) -> LessonConflict:
    """The older lesson holds: the newer is deleted (softly, restorable), in one revertible batch."""
    conflict = _locked_pending(conflict)
    batch = services.batch_create(
        memory=conflict.memory,
        kind=ChangeBatch.Kind.MANUAL,
        actor=actor,
        label="Conflict: kept the older lesson",
        reason=reason,
    )
    services.lesson_delete(lesson=conflict.newer, actor=actor, batch=batch)
    return _decide(
        conflict,
        status=LessonConflict.Status.RESOLVED,
        decision="keep_older",
        actor=actor,
        batch=batch,
        announce=announce,
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


def conflicts_follow_revert(*, batch: ChangeBatch) -> int:
    """A decision's batch was reverted: its conflict is pending again."""
    return LessonConflict.objects.filter(batch=batch).update(
        status=LessonConflict.Status.PENDING, decision="", batch=None, decided_by=None, decided_at=None
    )


DECISIONS = {"keep_newer": conflict_keep_newer, "keep_older": conflict_keep_older, "keep_both": conflict_keep_both}


def conflicts_bulk_decide(
    *, conflicts: Iterable[LessonConflict], decision: str, actor: services.Actor, reason: str = ""
) -> tuple[int, list[str]]:
    """One decision for many conflicts, each in its own batch (so each reverts on its own). A conflict
    that can no longer be decided (decided meanwhile, a protected lesson) is set aside with the reason.
    Returns (decided, [refusals])."""
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
    return len(done), refused
