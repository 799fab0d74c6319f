"""What the promotion feature does when other parts of the product act."""

from django.dispatch import receiver
from django.urls import reverse

from memory.jobs import enqueue_on_commit
from memory.models import PromotionCandidate
from memory.promotions.decisions import promotion_follow_revert
from memory.review_queue import ReviewItem, count_per_memory, register_review_source
from memory.signals import batch_reverted, working_lessons_added


@receiver(working_lessons_added, dispatch_uid="promotions.detect_after_new_lessons")
def detect_after_new_lessons(sender, memory_id, lesson_ids=(), **kwargs):
    # The model places new lessons on the nightly run or "Detect now", not once per append.
    enqueue_on_commit("memory.promotions.detect", memory_id, False)


@receiver(batch_reverted, dispatch_uid="promotions.follow_reverted_approval")
def follow_reverted_approval(sender, batch, revert_batch, **kwargs):
    promotion_follow_revert(batch=batch, revert_batch=revert_batch)


def _pending_candidates(memory):
    qs = PromotionCandidate.objects.filter(memory=memory, status=PromotionCandidate.Status.PENDING).order_by("-id")
    return [ReviewItem(f"Promote: {c.text[:90]}", reverse("promotions:detail", args=[c.pk])) for c in qs[:20]]


def _waiting_candidates():
    from django.db.models import F

    from memory.models import PromotionCandidate

    return PromotionCandidate.objects.filter(status=PromotionCandidate.Status.PENDING).annotate(
        waiting_since=F("created_at")
    )


def _describe_candidate(candidate):
    from memory.review_queue import ReviewItem

    return ReviewItem(f"Promote: {candidate.text[:90]}", reverse("promotions:detail", args=[candidate.pk]), "promotion")


@register_review_source(
    "promotions",
    singular="promotion",
    plural="promotions",
    order=10,
    list_url=lambda: reverse("promotions:inbox"),
    items=_pending_candidates,
    waiting=_waiting_candidates,
    describe=_describe_candidate,
)
def pending_promotions_per_memory(memory_ids):
    qs = PromotionCandidate.objects.filter(status=PromotionCandidate.Status.PENDING)
    return count_per_memory(qs, memory_ids)
