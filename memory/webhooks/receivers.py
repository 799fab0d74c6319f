"""The webhooks slice listens for review events and stores each in the outbox, in the same transaction."""

from django.dispatch import receiver
from django.urls import reverse

from memory.signals import batch_reverted, review_event
from memory.webhooks.services import webhook_event_record


@receiver(review_event, dispatch_uid="webhooks.record_review_event")
def record_review_event(sender, *, event_type, data, memory_id=None, team_id=None, lesson_texts=None, **kwargs):
    webhook_event_record(
        event_type=event_type, memory_id=memory_id, team_id=team_id, data=data, lesson_texts=lesson_texts
    )


# Reverting one of these undoes a decision a team heard about (an approval, an applied compaction, a
# run's or a file conflict's outcome); reverting an agent's or a person's own edit is history, not review.
_DECISION_KINDS = {"promotion", "compaction", "refinement", "pipeline", "sync"}


@receiver(batch_reverted, dispatch_uid="webhooks.decision_reverted")
def decision_reverted(sender, *, batch, revert_batch, **kwargs):
    if batch.kind not in _DECISION_KINDS:
        return
    webhook_event_record(
        event_type="review.decided",
        memory_id=batch.memory_id,
        data={
            "decision": "reverted",
            "by": revert_batch.actor_label,
            "count": 1,
            "items": [
                {
                    "kind": batch.get_kind_display().lower(),
                    "id": batch.pk,
                    "url": reverse("memory_history", args=[batch.memory_id]),
                }
            ],
        },
        lesson_texts={str(batch.pk): batch.label},  # a promotion's label quotes its lesson
    )
