"""Celery tasks of this feature: thin, take ids, call one service."""

from celery import shared_task

from memory.reflection.services import interaction_mark_failed, interaction_reflect

__all__ = ["reflect_interaction"]


@shared_task(name="memory.reflect_interaction")
def reflect_interaction(interaction_id):
    try:
        return interaction_reflect(interaction_id=interaction_id)
    except Exception as exc:
        # An unexpected failure must not leave the interaction pending forever; the error is re-raised for the logs.
        interaction_mark_failed(interaction_id=interaction_id, error=f"unexpected error: {exc!r}")
        raise
