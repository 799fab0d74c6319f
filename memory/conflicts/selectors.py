"""Reads of the conflict feature: the review list, one conflict, and the lines compiled memory marks."""

from typing import Any

from django.db.models import QuerySet

from memory.access import EVERY_MEMORY
from memory.models import ChangeBatch, LessonConflict, LessonStatus

INBOX_ROWS = 25  # conflicts per page of the list

# What a conflict's card shows: both lessons with their refs, the memory's names, the decision's batch.
_CARD_JOINS = ("older", "newer", "memory__persona", "memory__project")
_CARD_REFS = ("older__refs", "newer__refs")


def waiting() -> QuerySet[LessonConflict, LessonConflict]:
    """Pending conflicts whose two lessons are both still active: the ones a reviewer has to decide
    (a conflict whose lesson was retired meanwhile waits again if the lesson comes back)."""
    return LessonConflict.objects.filter(
        status=LessonConflict.Status.PENDING, older__status=LessonStatus.ACTIVE, newer__status=LessonStatus.ACTIVE
    )


def pending_conflicts(memory_ids: Any) -> QuerySet[LessonConflict, LessonConflict]:
    """Pending conflicts of the memories (a subquery or EVERY_MEMORY), newest first, lessons joined."""
    qs = waiting().select_related(*_CARD_JOINS).prefetch_related(*_CARD_REFS)
    if memory_ids is not EVERY_MEMORY:
        qs = qs.filter(memory_id__in=memory_ids)
    return qs.order_by("-id")


def conflicts_for_review(pks: list[int]) -> list[LessonConflict]:
    """Conflicts of any status with what their cards show, in the order of `pks`."""
    rows = (
        LessonConflict.objects.select_related(*_CARD_JOINS, "decided_by", "batch")
        .prefetch_related(*_CARD_REFS)
        .filter(pk__in=pks)
    )
    by_pk = {conflict.pk: conflict for conflict in rows}
    return [by_pk[pk] for pk in pks if pk in by_pk]


def conflict_for_review(pk: int) -> LessonConflict | None:
    found = conflicts_for_review([pk])
    return found[0] if found else None


def marked_lesson_ids(memory_id: int) -> set[int]:
    """The older lessons of the memory's pending conflicts whose two lessons are both still active."""
    return set(
        LessonConflict.objects.filter(
            memory_id=memory_id,
            status=LessonConflict.Status.PENDING,
            older__status=LessonStatus.ACTIVE,
            newer__status=LessonStatus.ACTIVE,
        ).values_list("older_id", flat=True)
    )


def history_positions(conflicts: list[LessonConflict]) -> dict[int, int]:
    """{batch id: its place on its memory's history, newest first (0-based)} for the conflicts'
    decision batches: which page of the history shows it. One query per memory."""
    oldest: dict[int, int] = {}
    for conflict in conflicts:
        if conflict.batch_id:
            oldest[conflict.memory_id] = min(oldest.get(conflict.memory_id, conflict.batch_id), conflict.batch_id)
    positions: dict[int, int] = {}
    for memory_id, batch_id in oldest.items():
        since = ChangeBatch.objects.filter(pk=batch_id).values("created_at")
        newer_first = (
            ChangeBatch.objects.filter(memory_id=memory_id, created_at__gte=since)
            .order_by("-created_at", "-id")
            .values_list("id", flat=True)
        )
        positions.update((pk, place) for place, pk in enumerate(newer_first))
    return positions
