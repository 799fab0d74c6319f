"""Reads of the conflict feature: the review list, one conflict, and the lines compiled memory marks."""

from typing import Any

from django.db.models import QuerySet

from memory.access import EVERY_MEMORY
from memory.models import LessonConflict, LessonStatus

INBOX_ROWS = 100


def waiting() -> QuerySet[LessonConflict, LessonConflict]:
    """Pending conflicts whose two lessons are both still active: the ones a reviewer has to decide
    (a conflict whose lesson was retired meanwhile waits again if the lesson comes back)."""
    return LessonConflict.objects.filter(
        status=LessonConflict.Status.PENDING, older__status=LessonStatus.ACTIVE, newer__status=LessonStatus.ACTIVE
    )


def pending_conflicts(memory_ids: Any) -> QuerySet[LessonConflict, LessonConflict]:
    """Pending conflicts of the memories (a subquery or EVERY_MEMORY), newest first, lessons joined."""
    qs = waiting().select_related("older", "newer", "memory__persona", "memory__project")
    if memory_ids is not EVERY_MEMORY:
        qs = qs.filter(memory_id__in=memory_ids)
    return qs.order_by("-id")


def conflict_for_review(pk: int) -> LessonConflict | None:
    return (
        LessonConflict.objects.select_related("older", "newer", "memory__persona", "memory__project", "decided_by")
        .filter(pk=pk)
        .first()
    )


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
