"""Celery tasks of this feature: thin, take ids, call one service."""

import logging

from celery import shared_task

from memory.reflection.services import interaction_mark_failed, interaction_reflect

__all__ = ["reflect_interaction"]

log = logging.getLogger(__name__)


@shared_task(name="memory.reflection.reflect_interaction")
def reflect_interaction(interaction_id):
    try:
        return interaction_reflect(interaction_id=interaction_id)
    except Exception as exc:
        # An unexpected failure must not leave the interaction pending forever. It is logged, not
        # raised: run in-process after the request's commit, raising would turn the agent's
        # accepted submission into a 500 although the interaction is stored (and now says why it failed).
        log.exception("reflection of interaction %s failed", interaction_id)
        interaction_mark_failed(interaction_id=interaction_id, error=f"unexpected error: {exc!r}")
        return []
