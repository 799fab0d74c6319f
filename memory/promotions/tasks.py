"""Celery tasks of this feature: thin, take ids, call one service."""

from celery import shared_task

from memory.models import Memory

__all__ = ["detect_promotions", "detect_promotions_everywhere"]


@shared_task(name="promotions.detect")
def detect_promotions(memory_id):
    from memory.promotions.services import promotion_detect

    memory = Memory.objects.select_related("persona").filter(pk=memory_id).first()
    if memory is None:
        return 0
    return len(promotion_detect(memory=memory).created)


@shared_task(name="promotions.detect_everywhere")
def detect_promotions_everywhere():
    """The nightly sweep: one detection task per memory."""
    ids = list(Memory.objects.filter(persona__is_active=True).values_list("pk", flat=True))
    for memory_id in ids:
        detect_promotions.delay(memory_id)
    return len(ids)
