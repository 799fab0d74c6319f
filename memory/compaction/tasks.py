"""Celery tasks of this feature: thin, take ids, call one service."""

from celery import shared_task
from django.db import transaction

from memory import services as memory_services
from memory.signals import working_lessons_added

__all__ = ["compaction_check_task", "compaction_propose_task"]


@shared_task(name="memory.compaction.check")
def compaction_check_task(memory_id):
    from memory.compaction.services import compaction_check

    proposal = compaction_check(memory_id=memory_id)
    return proposal.pk if proposal else None


@shared_task(name="memory.compaction.propose")
def compaction_propose_task(memory_id, user_id, recomputed_from_id=None):
    from django.contrib.auth import get_user_model

    from memory.compaction.services import CompactionError, compaction_propose
    from memory.models import CompactionProposal, Memory

    user = get_user_model().objects.get(pk=user_id)
    old = CompactionProposal.objects.filter(pk=recomputed_from_id).first() if recomputed_from_id else None
    try:
        return compaction_propose(
            memory=Memory.objects.get(pk=memory_id), actor=memory_services.Actor.for_user(user), recomputed_from=old,
            trigger_detail=f"Recomputed from proposal #{old.pk}, which went stale" if old else "",
        ).pk
    except CompactionError:
        return None


def _on_working_lessons_added(sender, memory_id, lesson_ids=(), **kwargs):
    transaction.on_commit(lambda: compaction_check_task.delay(memory_id))


def _on_batch_reverted(sender, batch, revert_batch, **kwargs):
    from memory.compaction.services import on_batch_reverted

    on_batch_reverted(sender, batch, revert_batch, **kwargs)


working_lessons_added.connect(_on_working_lessons_added, dispatch_uid="compaction-check")
memory_services.batch_reverted.connect(_on_batch_reverted, dispatch_uid="compaction-reverted")
