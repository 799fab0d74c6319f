"""The digest names the lessons of the recipient's teams that expire within 3 days (today included)."""

from datetime import date, datetime

import pytest
import time_machine
from django.core import mail
from django.utils import timezone

from memory import services
from memory.digest.services import digest_send_all
from personas.models import Membership
from tests.factories import SYSTEM, make_lesson

pytestmark = pytest.mark.django_db

TODAY = date(2026, 3, 10)


def _dated(memory, text, day, expires_when=""):
    lesson = make_lesson(memory, text)
    return services.lesson_set_expiry(lesson=lesson, expires_on=day, expires_when=expires_when, actor=SYSTEM)


@pytest.fixture
def world(team_memory, django_user_model, settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    settings.SITE_URL = "https://memory.example.com"
    mine, other = team_memory("mine"), team_memory("other")
    lead = django_user_model.objects.create_user("lead", email="lead@example.com")
    Membership.objects.create(team=mine.project.team, user=lead, role="approver")
    return mine, other, lead


def _send(now=TODAY):
    with time_machine.travel(timezone.make_aware(datetime(now.year, now.month, now.day, 6)), tick=False):
        return digest_send_all(force=True)


def test_lessons_expiring_within_three_days_of_my_teams_are_named(world):
    mine, other, _lead = world
    today = _dated(mine, "Deploys pause <today>.", date(2026, 3, 10))
    edge = _dated(mine, "Use the old CDN until the 4.1 release.", date(2026, 3, 13), "the 4.1 release ships")
    _dated(mine, "Beyond the window.", date(2026, 3, 14))
    _dated(other, "Persona-other lesson expiring tomorrow.", date(2026, 3, 11))
    assert _send() == 1
    (message,) = mail.outbox
    assert message.to == ["lead@example.com"]
    text = message.body
    assert "Lessons that agents stop reading within 3 days" in text
    assert "Deploys pause <today>." in text and "expires today" in text
    assert "Use the old CDN until the 4.1 release." in text and "expires on 2026-03-13" in text
    assert 'holds until "the 4.1 release ships"' in text
    assert "Beyond the window." not in text and "Persona-other" not in text
    assert f"https://memory.example.com/lessons/{edge.pk}/history/" in text
    html = message.alternatives[0][0]
    assert "Deploys pause &lt;today&gt;." in html and "<today>" not in html
    # The lesson expiring today has expired: it also waits for a decision, listed with the review items.
    assert "Expired on 2026-03-10: Deploys pause <today>." in text and f"expired-{today.pk}" in text


def test_a_lesson_about_to_expire_is_reason_enough_for_a_digest(world):
    mine, _other, _lead = world
    _dated(mine, "Feature flag stays on for the migration week.", date(2026, 3, 12))
    assert _send() == 1
    assert mail.outbox[0].subject == "Night Watch Memory: 1 lesson expires within 3 days"


def test_no_digest_when_nothing_expires_soon_and_nothing_waits(world):
    mine, _other, _lead = world
    _dated(mine, "Far away.", date(2026, 3, 20))
    assert _send() == 0
    assert _send(date(2026, 3, 17)) == 1  # three days before, it is named
