"""What the conflict feature does when other parts of the product act."""

from django.dispatch import receiver
from django.urls import reverse

from memory.conflicts.selectors import waiting
from memory.conflicts.services import conflicts_follow_revert
from memory.jobs import enqueue_on_commit
from memory.review_queue import ReviewItem, count_per_memory, register_review_source
from memory.signals import batch_reverted, working_lessons_added


@receiver(working_lessons_added, dispatch_uid="conflicts.detect_after_new_lessons")
def detect_after_new_lessons(sender, memory_id, lesson_ids=(), **kwargs):
    # Only the new lessons are compared, each with its neighbours: cheap enough for every batch.
    if lesson_ids:
        enqueue_on_commit("memory.conflicts.detect", memory_id, list(lesson_ids))


@receiver(batch_reverted, dispatch_uid="conflicts.follow_reverted_decision")
def follow_reverted_decision(sender, batch, revert_batch, **kwargs):
    conflicts_follow_revert(batch=batch)


def _pending():
    return waiting()


def _describe(conflict):
    return ReviewItem(
        f"Conflict: {conflict.evidence[:90]}", reverse("conflicts:detail", args=[conflict.pk]), "conflict"
    )


def _pending_conflicts(memory):
    return [_describe(c) for c in _pending().filter(memory=memory).order_by("-id")[:20]]


def _waiting_conflicts():
    from django.db.models import F

    return _pending().annotate(waiting_since=F("created_at"))


@register_review_source(
    "conflicts",
    singular="conflict",
    plural="conflicts",
    order=15,
    list_url=lambda: reverse("conflicts:inbox"),
    items=_pending_conflicts,
    waiting=_waiting_conflicts,
    describe=_describe,
)
def pending_conflicts_per_memory(memory_ids):
    return count_per_memory(_pending(), memory_ids)
