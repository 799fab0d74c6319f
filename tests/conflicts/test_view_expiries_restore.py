"""Restoring an expired lesson (its expiry cleared or moved), from the expiries page or the memory page."""

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from memory import services
from memory.models import Change, Lesson
from memory.selectors import compile_memory
from tests.factories import SYSTEM, make_lesson

pytestmark = pytest.mark.django_db


@pytest.fixture
def expired(memory):
    lesson = make_lesson(memory, "Use the <i>staging</i> mirror for the migration week.")
    return services.lesson_set_expiry(lesson=lesson, expires_on=timezone.localdate() - timedelta(days=3), actor=SYSTEM)


def _restore(lesson):
    return reverse("conflicts:expired-restore", args=[lesson.pk])


def test_restore_clears_the_expiry_and_agents_read_it_at_once(expired, memory, approver, client_for):
    response = client_for(approver).post(_restore(expired), {"expires_on": ""}, headers={"HX-Request": "true"})
    body = response.content.decode()
    assert f'id="expired-{expired.pk}"' in body and "Restored: the lesson no longer expires." in body
    assert "&lt;i&gt;staging&lt;/i&gt;" in body and "badge-expired" not in body
    memory.refresh_from_db()
    assert "staging</i> mirror" in compile_memory(memory).text
    batch = Change.objects.filter(lesson=expired).latest("id").batch
    services.batch_revert(batch=batch, actor=services.Actor.for_user(approver))
    assert Lesson.objects.get(pk=expired.pk).is_expired


def test_restore_may_move_the_date_instead(expired, approver, client_for):
    later = timezone.localdate() + timedelta(days=30)
    response = client_for(approver).post(_restore(expired), {"expires_on": later.isoformat()}, follow=True)
    assert f"Restored until {later.isoformat()}." in response.content.decode()
    assert Lesson.objects.get(pk=expired.pk).expires_on == later


@pytest.mark.parametrize("value, message", [("soon", "is not a date"), ("2020-01-01", "day after today")])
def test_a_bad_date_is_a_clear_error_that_changes_nothing(expired, approver, client_for, value, message):
    changes = Change.objects.count()
    response = client_for(approver).post(_restore(expired), {"expires_on": value}, headers={"HX-Request": "true"})
    body = response.content.decode()
    assert "Not restored:" in body and message in body and 'role="alert"' in body
    assert Change.objects.count() == changes and Lesson.objects.get(pk=expired.pk).is_expired


def test_from_the_memory_page_it_goes_back_there(expired, memory, approver, client_for):
    client = client_for(approver)
    page = client.get(memory.get_absolute_url()).content.decode()
    assert f'formaction="{_restore(expired)}"' in page
    back = memory.get_absolute_url() + f"#lesson-{expired.pk}"
    response = client.post(_restore(expired), {"next": back})
    assert response.status_code == 302 and response["Location"] == back


def test_viewers_and_curators_cannot_restore(expired, viewer, curator, client_for):
    for user in (viewer, curator):
        assert client_for(user).post(_restore(expired)).status_code == 403
    assert Lesson.objects.get(pk=expired.pk).is_expired
