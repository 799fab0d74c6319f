"""Proposed expiries made the way the product makes them: a lesson written, then detection over it."""

from memory.conflicts.services import conflicts_detect
from memory.models import ExpiryProposal
from tests.factories import make_lesson


def propose(memory, text, **lesson_kwargs):
    """A lesson whose words name its end, and the expiry detection proposed for it."""
    lesson = make_lesson(memory, text, **lesson_kwargs)
    conflicts_detect(memory=memory, lesson_ids=[lesson.pk])
    return ExpiryProposal.objects.get(lesson=lesson)
