"""How compaction shows up elsewhere in the product: pending proposals wait for review."""

from django.dispatch import receiver
from django.urls import reverse

from memory.compaction.services import compaction_follow_revert
from memory.jobs import enqueue_on_commit
from memory.models import CompactionProposal
from memory.review_queue import ReviewItem, count_per_memory, register_review_source
from memory.signals import batch_reverted, working_lessons_added


@receiver(working_lessons_added, dispatch_uid="compaction-check")
def check_after_new_lessons(sender, memory_id, lesson_ids=(), **kwargs):
    enqueue_on_commit("memory.compaction.check", memory_id)


@receiver(batch_reverted, dispatch_uid="compaction-reverted")
def follow_reverted_compaction(sender, batch, revert_batch, **kwargs):
    compaction_follow_revert(batch=batch, revert_batch=revert_batch)


def _pending_proposals(memory):
    qs = CompactionProposal.objects.filter(memory=memory, status=CompactionProposal.Status.PENDING).order_by("-id")
    return [
        ReviewItem(
            f"Compaction proposal #{p.pk} ({p.get_trigger_display().lower()})",
            reverse("compaction-detail", args=[p.pk]),
        )
        for p in qs[:20]
    ]


def _waiting_proposals():
    from django.db.models import F

    from memory.models import CompactionProposal

    return CompactionProposal.objects.filter(status=CompactionProposal.Status.PENDING).annotate(
        waiting_since=F("created_at")
    )


def _describe_proposal(proposal):
    from memory.review_queue import ReviewItem

    return ReviewItem(
        f"Compaction proposal #{proposal.pk} ({proposal.get_trigger_display().lower()})",
        reverse("compaction-detail", args=[proposal.pk]),
        "compaction",
    )


@register_review_source(
    "compactions",
    singular="compaction",
    plural="compactions",
    order=20,
    list_url=lambda: reverse("compaction-list"),
    items=_pending_proposals,
    waiting=_waiting_proposals,
    describe=_describe_proposal,
)
def pending_compactions_per_memory(memory_ids):
    qs = CompactionProposal.objects.filter(status=CompactionProposal.Status.PENDING)
    return count_per_memory(qs, memory_ids)
