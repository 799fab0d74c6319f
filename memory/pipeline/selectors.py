"""Reads of the observation pipeline for its pages."""

from django.db.models import Count

from memory.models import Lesson, LessonStatus, Relevance, Tier


def relevance_histogram(memory):
    """{relevance: count} of the active working lessons, in every relevance order (one query)."""
    counts = dict(Lesson.objects.filter(memory=memory, tier=Tier.WORKING, status=LessonStatus.ACTIVE)
                  .order_by().values_list("relevance").annotate(n=Count("id")))
    return [(r.value, counts.get(r.value, 0)) for r in Relevance]
