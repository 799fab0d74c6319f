"""Reads of temporary lessons for people: proposed expiries waiting, expired lessons waiting for a
decision, and lessons about to expire (the digest)."""

from datetime import date, timedelta
from typing import Any

from django.db.models import DateTimeField, F, QuerySet
from django.db.models.functions import Cast
from django.utils import timezone

from memory.access import EVERY_MEMORY
from memory.models import ExpiryProposal, Lesson, LessonStatus

PAGE_SIZE = 25
# The digest names the lessons that stop being served within this many days.
EXPIRING_SOON_DAYS = 3


def _scoped(qs: QuerySet[Any, Any], memory_ids: Any) -> QuerySet[Any, Any]:
    return qs if memory_ids is EVERY_MEMORY else qs.filter(memory_id__in=memory_ids)


def waiting_proposals() -> QuerySet[ExpiryProposal, ExpiryProposal]:
    """Pending proposals whose lesson is still live: the ones a person has to decide."""
    return ExpiryProposal.objects.filter(status=ExpiryProposal.Status.PENDING, lesson__status=LessonStatus.ACTIVE)


def expired_lessons(today: date | None = None) -> QuerySet[Lesson, Lesson]:
    """Live lessons past their day: agents no longer read them, and they wait for a person to restore
    or retire them (the same rule as compile: from the expires_on day on)."""
    return Lesson.objects.filter(status=LessonStatus.ACTIVE, expires_on__lte=today or timezone.localdate())


def expired_waiting_since() -> QuerySet[Lesson, Lesson]:
    """Expired lessons annotated with when they began to wait: the start of their expires_on day."""
    return expired_lessons().annotate(waiting_since=Cast(F("expires_on"), DateTimeField()))


def proposals_for_review(memory_ids: Any) -> QuerySet[ExpiryProposal, ExpiryProposal]:
    """Waiting proposals of the memories (a subquery or EVERY_MEMORY), oldest first, lessons joined."""
    qs = waiting_proposals().select_related("lesson", "memory__persona", "memory__project")
    return _scoped(qs, memory_ids).order_by("created_at", "id")


def expired_for_review(memory_ids: Any) -> QuerySet[Lesson, Lesson]:
    """Expired lessons of the memories, longest expired first, memories joined."""
    qs = expired_lessons().select_related("memory__persona", "memory__project")
    return _scoped(qs, memory_ids).order_by("expires_on", "id")


def expiring_soon(memory_ids: Any, *, today: date | None = None) -> list[Lesson]:
    """Live lessons whose expires_on falls within the next EXPIRING_SOON_DAYS days (today included),
    soonest first, memories joined."""
    today = today or timezone.localdate()
    qs = Lesson.objects.filter(
        status=LessonStatus.ACTIVE, expires_on__gte=today, expires_on__lte=today + timedelta(days=EXPIRING_SOON_DAYS)
    ).select_related("memory__persona", "memory__project")
    return list(_scoped(qs, memory_ids).order_by("expires_on", "id"))
