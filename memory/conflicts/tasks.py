"""Celery tasks of this feature: thin, take ids, call one service."""

from celery import shared_task

from memory.conflicts.services import conflicts_detect
from memory.jobs import enqueue_on_commit
from memory.models import Memory

__all__ = ["detect_conflicts", "detect_conflicts_everywhere"]


@shared_task(name="memory.conflicts.detect")
def detect_conflicts(memory_id, lesson_ids=None):
    memory = Memory.objects.filter(pk=memory_id).first()
    if memory is None:
        return None
    return conflicts_detect(memory=memory, lesson_ids=lesson_ids)


@shared_task(name="memory.conflicts.detect_everywhere")
def detect_conflicts_everywhere():
    """The nightly sweep: one full detection per memory of an active persona."""
    ids = list(
        Memory.objects.filter(persona__is_active=True, persona__archived_at__isnull=True).values_list("pk", flat=True)
    )
    for memory_id in ids:
        enqueue_on_commit("memory.conflicts.detect", memory_id, None)
    return len(ids)
