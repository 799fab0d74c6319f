"""Celery tasks of the review digest: thin, call one service."""

from celery import shared_task

from memory.digest.services import digest_send_all

__all__ = ["send_review_digests"]


@shared_task(name="memory.digest.send")
def send_review_digests():
    return digest_send_all()
