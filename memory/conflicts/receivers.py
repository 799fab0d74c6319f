"""What the conflict feature does when other parts of the product act."""

from django.db.models import F
from django.dispatch import receiver
from django.urls import reverse

from memory.conflicts.expiries import expiries_follow_revert
from memory.conflicts.expiry_selectors import expired_lessons, expired_waiting_since, waiting_proposals
from memory.conflicts.selectors import waiting
from memory.conflicts.services import conflicts_follow_revert
from memory.jobs import enqueue_on_commit
from memory.review_queue import ReviewItem, count_per_memory, register_review_source
from memory.signals import batch_reverted, working_lessons_added


@receiver(working_lessons_added, dispatch_uid="conflicts.detect_after_new_lessons")
def detect_conflicts_after_new_lessons(sender, memory_id, lesson_ids=(), **kwargs):
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


# Temporary lessons: a reverted acceptance makes its proposal wait again, and proposed expiries and
# expired lessons join the review queue.


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
    # Counted from the few expired lessons (the partial index on expires_on), then narrowed to the
    # memories: `memory_id + 0` keeps the database from starting with the memories' lessons instead,
    # which SQLite did for a person of one team (14 ms a page at a million lessons, against 1 ms).
    expired = expired_lessons().annotate(owner_memory=F("memory_id") + 0)
    return count_per_memory(expired, memory_ids, memory_field="owner_memory")
