"""The nav badge's totals: one query a page, kept per scope, and never a stale count."""

from datetime import timedelta

import time_machine
from django.contrib.auth import get_user_model
from django.utils import timezone

from memory import services
from memory.access import EVERY_MEMORY, visible_memory_ids
from memory.review_queue import totals_by_source
from personas.models import Membership
from tests.factories import SYSTEM, make_lesson


def _expiring(memory, text, *, on):
    return services.lesson_set_expiry(lesson=make_lesson(memory, text), expires_on=on, actor=SYSTEM)


def _lead_of(memory, name):
    user = get_user_model().objects.create_user(name, password="pw-not-used-here")
    Membership.objects.create(team=memory.project.team, user=user, role="viewer")
    return user


def test_each_scope_counts_its_own_items_and_the_count_follows_new_items(team_memory, django_assert_num_queries):
    red, blue = team_memory("red"), team_memory("blue")
    red_lead, blue_lead = _lead_of(red, "red-lead"), _lead_of(blue, "blue-lead")
    yesterday = timezone.localdate() - timedelta(days=1)
    _expiring(red, "Use the staging mirror this week.", on=yesterday)

    assert totals_by_source(visible_memory_ids(red_lead)) == {"expired": 1}
    assert totals_by_source(visible_memory_ids(blue_lead)) == {}  # the red lead's kept SQL is not theirs
    assert totals_by_source(EVERY_MEMORY) == {"expired": 1}

    _expiring(blue, "Pin the old client until the upgrade.", on=yesterday)
    _expiring(red, "Skip the nightly export for now.", on=yesterday)
    scope = visible_memory_ids(red_lead)
    with django_assert_num_queries(1):  # the kept SQL, run again: no stale count
        assert totals_by_source(scope) == {"expired": 2}
    assert totals_by_source(visible_memory_ids(blue_lead)) == {"expired": 1}
    assert totals_by_source(EVERY_MEMORY) == {"expired": 3}


def test_a_lesson_expiring_tomorrow_is_counted_from_tomorrow(memory):
    tomorrow = timezone.localdate() + timedelta(days=1)
    _expiring(memory, "Keep the feature flag on until the launch.", on=tomorrow)
    assert totals_by_source(EVERY_MEMORY) == {}
    with time_machine.travel(timezone.now() + timedelta(days=1)):
        assert totals_by_source(EVERY_MEMORY) == {"expired": 1}


def test_the_kept_sql_is_bounded_and_an_evicted_scope_is_compiled_again(team_memory, monkeypatch):
    from memory import review_queue

    monkeypatch.setattr(review_queue, "TOTALS_SQL_KEPT", 2)
    monkeypatch.setattr(review_queue, "_TOTALS_SQL", {})
    memories = [team_memory(label) for label in ("red", "blue", "green")]
    leads = [_lead_of(memory, f"{memory.project.slug}-lead") for memory in memories]
    yesterday = timezone.localdate() - timedelta(days=1)
    for memory in memories:
        _expiring(memory, f"Temporary rule of {memory.project.name}.", on=yesterday)
    for _ in range(2):
        for lead in leads:
            assert totals_by_source(visible_memory_ids(lead)) == {"expired": 1}
            assert len(review_queue._TOTALS_SQL) <= 2
