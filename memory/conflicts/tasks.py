"""Celery tasks of this feature: thin, take ids, call one service."""

from celery import shared_task

from memory.conflicts.model_runs import conflicts_model_detect
from memory.conflicts.services import conflicts_detect
from memory.jobs import enqueue_on_commit
from memory.models import Memory

__all__ = ["detect_conflicts", "detect_conflicts_everywhere", "detect_conflicts_with_model"]


@shared_task(name="memory.conflicts.detect")
def detect_conflicts(memory_id, lesson_ids=None):
    memory = Memory.objects.filter(pk=memory_id).first()
    if memory is None:
        return None
    return conflicts_detect(memory=memory, lesson_ids=lesson_ids)


@shared_task(name="memory.conflicts.detect_with_model")
def detect_conflicts_with_model(memory_id, lesson_ids=None):
    memory = Memory.objects.select_related("persona").filter(pk=memory_id).first()
    if memory is None:
        return None
    run = conflicts_model_detect(memory=memory, lesson_ids=lesson_ids)
    return None if run is None else run.as_dict()


@shared_task(name="memory.conflicts.detect_everywhere")
def detect_conflicts_everywhere():
    """The nightly sweep: one full detection per memory of an active persona."""
    ids = list(
        Memory.objects.filter(persona__is_active=True, persona__archived_at__isnull=True).values_list("pk", flat=True)
    )
    for memory_id in ids:
        enqueue_on_commit("memory.conflicts.detect", memory_id, None)
    return len(ids)
