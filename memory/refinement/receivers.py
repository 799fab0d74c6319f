"""Signal receivers of refinement (connected in MemoryConfig.ready)."""

from django.dispatch import receiver
from django.urls import reverse

from memory.refinement.selectors import runs_needing_a_look
from memory.refinement.services import refinement_follow_revert
from memory.review_queue import ReviewItem, count_per_memory, register_review_source
from memory.signals import batch_reverted


@receiver(batch_reverted, dispatch_uid="refinement_run_reverted")
def follow_reverted_run(sender, batch, revert_batch, **kwargs):
    refinement_follow_revert(batch=batch, revert_batch=revert_batch)


def _run_items(memory):
    return [
        ReviewItem(
            f"Refinement run #{run.pk}: {run.get_status_display().lower()}",
            reverse("refinement:run", args=[run.pk]),
            run.status,
        )
        for run in runs_needing_a_look().filter(memory=memory).order_by("-started_at")[:20]
    ]


def _waiting_runs():
    from django.db.models import F
    from django.db.models.functions import Coalesce

    # A run waits from the moment it ended badly.
    return runs_needing_a_look().annotate(waiting_since=Coalesce(F("finished_at"), F("started_at")))


def _describe_run(run):
    return ReviewItem(
        f"Refinement run #{run.pk}: {run.get_status_display().lower()}",
        reverse("refinement:run", args=[run.pk]),
        "refinement run to look at",
    )


@register_review_source(
    "refinement-runs",
    singular="refinement run to look at",
    plural="refinement runs to look at",
    order=30,
    list_url=lambda: reverse("refinement:runs"),
    items=_run_items,
    waiting=_waiting_runs,
    describe=_describe_run,
)
def refinement_runs_needing_a_look(memory_ids):
    return count_per_memory(runs_needing_a_look(), memory_ids)
