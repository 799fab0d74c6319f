"""Reads of the observation pipeline for its pages."""

from typing import Any

from django.db.models import Count, QuerySet

from memory.models import Lesson, LessonStatus, Memory, PipelineRun, PromotionCandidate, Relevance, Tier


def relevance_histogram(memory: Memory) -> list[tuple[str, int]]:
    """{relevance: count} of the active working lessons, in every relevance order (one query)."""
    counts = dict(
        Lesson.objects.filter(memory=memory, tier=Tier.WORKING, status=LessonStatus.ACTIVE)
        .order_by()
        .values_list("relevance")
        .annotate(n=Count("id"))
    )
    return [(r.value, counts.get(r.value, 0)) for r in Relevance]


def run_results(run: PipelineRun) -> dict[str, list[Any]]:
    """What a finished run created: observations, new reflections (pending candidates) and, when the memory
    sends reflections straight to core, core lessons. Three queries."""
    lessons: list[Lesson] = []
    if run.batch_id:
        lessons = list(
            Lesson.objects.filter(changes__batch_id=run.batch_id, changes__action="create")
            .prefetch_related("refs")
            .order_by("id")
            .distinct()
        )
    return {
        "observations": [lesson for lesson in lessons if lesson.tier == Tier.WORKING],
        "core": [lesson for lesson in lessons if lesson.tier == Tier.CORE],
        "reflections": list(
            PromotionCandidate.objects.filter(memory_id=run.memory_id, evidence__run=run.pk).order_by("id")
        ),
    }


def runs_needing_a_look() -> QuerySet[PipelineRun]:
    """Failed runs waiting in the review queue."""
    from memory.review_queue import runs_needing_a_look as needing

    return needing(
        PipelineRun,
        failed_statuses=[PipelineRun.Status.FAILED],
        completed_status=PipelineRun.Status.COMPLETED,
        started_field="created_at",
    )
