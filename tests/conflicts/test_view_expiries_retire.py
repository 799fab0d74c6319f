"""Retiring an expired lesson: deleted softly, restorable; only an approver of its team."""

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from memory import services
from memory.models import Change, Lesson, LessonStatus
from tests.factories import SYSTEM, make_lesson

pytestmark = pytest.mark.django_db


@pytest.fixture
def expired(memory):
    lesson = make_lesson(memory, "Use the <i>staging</i> mirror for the migration week.")
    return services.lesson_set_expiry(lesson=lesson, expires_on=timezone.localdate() - timedelta(days=3), actor=SYSTEM)


def _retire(lesson):
    return reverse("conflicts:expired-retire", args=[lesson.pk])


def test_retire_deletes_softly(expired, approver, client_for):
    response = client_for(approver).post(_retire(expired), {"reason": "migration over"}, follow=True)
    assert "Retired: the lesson is deleted" in response.content.decode()
    lesson = Lesson.objects.get(pk=expired.pk)
    assert lesson.status == LessonStatus.DELETED
    assert Change.objects.filter(lesson=lesson).latest("id").batch.reason == "migration over"


def test_a_lesson_that_has_not_expired_is_refused(memory, approver, client_for):
    lesson = make_lesson(memory, "Always run migrations before deploys.")
    response = client_for(approver).post(_retire(lesson), follow=True)
    assert "Not retired:" in response.content.decode()
    assert Lesson.objects.get(pk=lesson.pk).status == LessonStatus.ACTIVE


def test_viewers_and_curators_cannot_retire(expired, viewer, curator, client_for):
    for user in (viewer, curator):
        assert client_for(user).post(_retire(expired)).status_code == 403
    assert Lesson.objects.get(pk=expired.pk).is_expired
