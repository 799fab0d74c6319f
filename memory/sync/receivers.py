"""File conflicts wait in the one review queue."""

from django.db.models.signals import post_save
from django.dispatch import receiver
from django.urls import reverse

from memory.review_queue import ReviewItem, count_per_memory, register_review_source
from memory.signals import review_event


def _pending(memory):
    from memory.sync.models import SyncConflict

    qs = SyncConflict.objects.filter(memory=memory, status=SyncConflict.Status.PENDING).order_by("id")
    return [
        ReviewItem(
            f"File conflict #{c.pk} on lesson {c.lesson_id} ({c.file_name})", reverse("sync-conflict", args=[c.pk])
        )
        for c in qs[:20]
    ]


@register_review_source(
    "file-conflicts",
    singular="file conflict",
    plural="file conflicts",
    order=40,
    list_url=lambda: reverse("sync-conflicts"),
    items=_pending,
)
def pending_file_conflicts(memory_ids):
    from memory.sync.models import SyncConflict

    return count_per_memory(SyncConflict.objects.filter(status=SyncConflict.Status.PENDING), memory_ids)


@receiver(post_save, sender="memory.SyncConflict", dispatch_uid="sync.conflict_waits")
def conflict_waits(sender, instance, created, **kwargs):
    """A new file conflict is an event for its team, stored with the conflict (same transaction)."""
    if created:
        review_event.send(
            sender=sender,
            event_type="review.waiting",
            memory_id=instance.memory_id,
            data={
                "count": 1,
                "items": [
                    {"kind": "file conflict", "id": instance.pk, "url": reverse("sync-conflict", args=[instance.pk])}
                ],
            },
        )
