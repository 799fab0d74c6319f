"""How the pipeline shows up elsewhere in the product: a failed run waits for someone to look."""

from django.urls import reverse

from memory.pipeline.selectors import runs_needing_a_look
from memory.review_queue import ReviewItem, count_per_memory, register_review_source


def _run_items(memory):
    return [
        ReviewItem(f"Pipeline run #{run.pk}: failed", reverse("pipeline:run", args=[run.pk]), run.status)
        for run in runs_needing_a_look().filter(memory=memory).order_by("-created_at")[:20]
    ]


def _waiting_runs():
    from django.db.models import F
    from django.db.models.functions import Coalesce

    # A run waits from the moment it failed.
    return runs_needing_a_look().annotate(waiting_since=Coalesce(F("finished_at"), F("created_at")))


def _describe_run(run):
    return ReviewItem(
        f"Pipeline run #{run.pk}: failed", reverse("pipeline:run", args=[run.pk]), "pipeline run to look at"
    )


@register_review_source(
    "pipeline-runs",
    singular="pipeline run to look at",
    plural="pipeline runs to look at",
    order=40,
    list_url=lambda: reverse("pipeline:runs"),
    items=_run_items,
    waiting=_waiting_runs,
    describe=_describe_run,
)
def pipeline_runs_needing_a_look(memory_ids):
    return count_per_memory(runs_needing_a_look(), memory_ids)
