"""Celery tasks of the review digest: thin, call one service."""

from celery import shared_task

__all__ = ["send_review_digests"]


@shared_task(name="review.send_digests")
def send_review_digests():
    from memory.digest.services import digest_send_all

    return digest_send_all()
