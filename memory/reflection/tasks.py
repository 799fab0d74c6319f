"""Celery tasks of this feature: thin, take ids, call one service."""

from celery import shared_task

from memory.reflection.services import interaction_reflect

__all__ = ["reflect_interaction"]


@shared_task(name="memory.reflect_interaction")
def reflect_interaction(interaction_id):
    return interaction_reflect(interaction_id=interaction_id)
