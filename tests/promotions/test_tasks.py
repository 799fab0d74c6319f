"""Detection runs after new working lessons and on the nightly schedule."""

from datetime import date

import pytest
from django.conf import settings

from memory.models import PromotionCandidate
from memory.promotions.tasks import detect_promotions, detect_promotions_everywhere
from memory.signals import working_lessons_added
from tests.factories import MemoryFactory, make_lesson
from tests.promotions.conftest import THEME

pytestmark = pytest.mark.django_db


def test_new_working_lessons_enqueue_detection_after_commit(memory, django_capture_on_commit_callbacks):
    lessons = [make_lesson(memory, text, refs=ref, day=date(2026, 1, 1 + i)) for i, (text, ref) in enumerate(THEME)]
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        working_lessons_added.send(sender=None, memory_id=memory.pk, lesson_ids=[lesson.pk for lesson in lessons])
    # Other features (the compaction check) react to the same signal; detection is one callback.
    assert sum("detect_after_new_lessons" in c.__qualname__ for c in callbacks) == 1
    assert PromotionCandidate.objects.filter(memory=memory, status="pending").count() == 1


def test_task_runs_detection_for_one_memory(memory, themed):
    themed(3)
    assert detect_promotions.delay(memory.pk).get() == 1
    assert detect_promotions.delay(memory.pk).get() == 0
    assert detect_promotions.delay(987654).get() == 0


def test_a_failed_run_is_recorded_for_the_inbox(memory, themed, llm_settings, settings):
    from memory.promotions.services import detection_status

    memory.persona.provider = "openai"
    memory.persona.save()
    settings.OPENAI_API_KEY = ""
    themed(3)
    assert detect_promotions.delay(memory.pk).get() == 0
    status = detection_status([memory.pk])[memory.pk]
    assert status["state"] == "failed" and "OPENAI_API_KEY" in status["message"]
    assert not PromotionCandidate.objects.exists()


def test_nightly_sweep_covers_every_active_memory(memory, themed, django_capture_on_commit_callbacks):
    themed(3)
    MemoryFactory()
    archived = MemoryFactory()
    archived.persona.is_active = False
    archived.persona.save()
    with django_capture_on_commit_callbacks(execute=True) as queued:
        assert detect_promotions_everywhere.delay().get() == 2
    assert len([c for c in queued if c.__qualname__.endswith("[memory.promotions.detect]")]) == 2
    assert PromotionCandidate.objects.count() == 1


def test_nightly_schedule_is_configured():
    entry = settings.CELERY_BEAT_SCHEDULE["promotions-nightly"]
    assert entry["task"] == detect_promotions_everywhere.name
