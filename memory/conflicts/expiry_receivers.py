"""What temporary lessons do when other parts of the product act: a reverted acceptance makes its
proposal wait again, and proposed expiries and expired lessons join the review queue."""

from django.dispatch import receiver
from django.urls import reverse

from memory.conflicts.expiries import expiries_follow_revert
from memory.conflicts.expiry_selectors import expired_lessons, expired_waiting_since, waiting_proposals
from memory.review_queue import ReviewItem, count_per_memory, register_review_source
from memory.signals import batch_reverted


@receiver(batch_reverted, dispatch_uid="conflicts.expiry_follow_reverted_acceptance")
def follow_reverted_acceptance(sender, batch, revert_batch, **kwargs):
    expiries_follow_revert(batch=batch)


def _until(proposal):
    return proposal.expires_on.isoformat() if proposal.expires_on else proposal.expires_when[:60]


def _describe_proposal(proposal):
    return ReviewItem(
        f"Proposed expiry (until {_until(proposal)}): {proposal.lesson.text[:90]}",
        reverse("conflicts:expiries") + f"#expiry-{proposal.pk}",
        "proposed expiry",
    )


def _waiting_proposals():
    from django.db.models import F

    return waiting_proposals().select_related("lesson").annotate(waiting_since=F("created_at"))


def _proposals_of(memory):
    return [_describe_proposal(p) for p in waiting_proposals().filter(memory=memory).select_related("lesson")[:20]]


@register_review_source(
    "expiries",
    singular="proposed expiry",
    plural="proposed expiries",
    order=16,
    list_url=lambda: reverse("conflicts:expiries"),
    items=_proposals_of,
    waiting=_waiting_proposals,
    describe=_describe_proposal,
)
def pending_expiries_per_memory(memory_ids):
    return count_per_memory(waiting_proposals(), memory_ids)


def _describe_expired(lesson):
    return ReviewItem(
        f"Expired on {lesson.expires_on.isoformat()}: {lesson.text[:90]}",
        reverse("conflicts:expiries") + f"?show=expired#expired-{lesson.pk}",
        "expired lesson",
    )


def _expired_of(memory):
    return [_describe_expired(lesson) for lesson in expired_lessons().filter(memory=memory).order_by("expires_on")[:20]]


@register_review_source(
    "expired",
    singular="expired lesson",
    plural="expired lessons",
    order=17,
    list_url=lambda: reverse("conflicts:expiries") + "?show=expired",
    items=_expired_of,
    waiting=expired_waiting_since,
    describe=_describe_expired,
)
def expired_lessons_per_memory(memory_ids):
    return count_per_memory(expired_lessons(), memory_ids)
