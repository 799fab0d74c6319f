"""Celery tasks of this feature: thin, take ids, call one service."""

from celery import shared_task
from django.db import transaction

from memory.promotions.detection_runs import promotion_detect_request, promotion_detect_run

__all__ = ["detect_promotions", "detect_promotions_everywhere"]


@shared_task(name="memory.promotions.detect")
def detect_promotions(memory_id, place_new=True):
    return promotion_detect_run(memory_id=memory_id, place_new=place_new)


@shared_task(name="memory.promotions.detect_everywhere")
def detect_promotions_everywhere():
    """The nightly sweep: one detection task per memory of an active persona."""
    with transaction.atomic():
        return len(promotion_detect_request())
