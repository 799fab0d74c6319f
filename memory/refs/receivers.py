"""How ref checking shows up elsewhere in the product: refs that need a decision wait for review."""

from django.dispatch import receiver

from memory.refs.selectors import refs_needing_review_count
from memory.refs.services import refs_link_anchors
from memory.review_queue import ReviewItem, count_per_memory, register_review_source
from memory.signals import lesson_refs_writing


@receiver(lesson_refs_writing, dispatch_uid="refs.link_anchors")
def link_anchors(sender, lesson, rows, new=False, **kwargs):
    """Every ref a lesson write stores points at its lesson's anchor for that ref."""
    refs_link_anchors(lesson, rows, new=new)


def _refs_to_review(memory):
    count = refs_needing_review_count([memory.pk]).get(memory.pk, 0)
    return (
        [
            ReviewItem(
                f"{count} ref{'s' if count != 1 else ''} moved, changed or gone: review them in the list",
                memory.get_absolute_url() + "?refs=review",
            )
        ]
        if count
        else []
    )


@register_review_source("refs", singular="ref to review", plural="refs to review", order=50, items=_refs_to_review)
def refs_needing_review_rows(memory_ids):
    """The same count as refs_needing_review_count, for the review queue's UNION queries."""
    from memory.models import LessonRef, LessonStatus
    from memory.refs.models import NEEDS_REVIEW

    # anchor not null said outright, as there: the refs' partial index on anchor answers it.
    refs = LessonRef.objects.filter(
        anchor__isnull=False, lesson__status=LessonStatus.ACTIVE, anchor__status__in=NEEDS_REVIEW
    )
    return count_per_memory(refs, memory_ids, memory_field="lesson__memory_id")
