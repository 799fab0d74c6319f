"""Coverage of working lessons: how many current reflections or core lessons cite each one.

A current reflection is a pending promotion candidate; a core lesson cites the working lessons it
was derived from. 0 = uncited, 1-3 = cited, 4 or more = reinforced.
"""

from collections import Counter

from memory.models import Lesson, LessonStatus, PromotionCandidate, Tier

UNCITED, CITED, REINFORCED = "uncited", "cited", "reinforced"


def coverage_tag(count):
    if not count:
        return UNCITED
    return CITED if count < 4 else REINFORCED


def coverage_counts(memory, lesson_ids=None):
    """{lesson_id: count} for the memory's lessons (or only `lesson_ids`), in two queries."""
    counts = Counter()
    through = PromotionCandidate.supporting.through.objects.filter(
        promotioncandidate__memory=memory,
        promotioncandidate__status=PromotionCandidate.Status.PENDING,
    )
    derived = Lesson.derived_from.through.objects.filter(
        from_lesson__memory=memory,
        from_lesson__tier=Tier.CORE,
        from_lesson__status=LessonStatus.ACTIVE,
    )
    if lesson_ids is not None:
        lesson_ids = list(lesson_ids)
        through = through.filter(lesson_id__in=lesson_ids)
        derived = derived.filter(to_lesson_id__in=lesson_ids)
    counts.update(through.values_list("lesson_id", flat=True))
    counts.update(derived.values_list("to_lesson_id", flat=True))
    return dict(counts)
