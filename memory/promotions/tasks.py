"""Celery tasks of this feature: thin, take ids, call one service."""

from celery import shared_task
from django.db import transaction

__all__ = ["detect_promotions", "detect_promotions_everywhere"]


@shared_task(name="promotions.detect")
def detect_promotions(memory_id, place_new=True):
    from memory.promotions.detection_runs import promotion_detect_run

    return promotion_detect_run(memory_id=memory_id, place_new=place_new)


@shared_task(name="promotions.detect_everywhere")
def detect_promotions_everywhere():
    """The nightly sweep: one detection task per memory of an active persona."""
    from memory.promotions.detection_runs import promotion_detect_request

    with transaction.atomic():
        return len(promotion_detect_request())
