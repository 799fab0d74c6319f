"""Celery tasks of this feature: thin, take ids, call one service."""

from celery import shared_task

from memory.compaction.services import compaction_check, compaction_propose_requested

__all__ = ["compaction_check_task", "compaction_propose_task"]


@shared_task(name="memory.compaction.check")
def compaction_check_task(memory_id):
    proposal = compaction_check(memory_id=memory_id)
    return proposal.pk if proposal else None


@shared_task(name="memory.compaction.propose")
def compaction_propose_task(memory_id, user_id, recomputed_from_id=None):
    return compaction_propose_requested(memory_id=memory_id, user_id=user_id, recomputed_from_id=recomputed_from_id)
