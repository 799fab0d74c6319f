"""A lesson's expiry is written like any other field: recorded in history, undone by revert, and a
core lesson is dated only by a person."""

from datetime import date

import pytest
from django.core.exceptions import PermissionDenied, ValidationError

from memory import services
from memory.history.bulk import NewLesson, lessons_bulk_create
from memory.models import Change, ChangeBatch, Lesson
from memory.rendering import snapshot_diff
from tests.factories import SYSTEM, make_lesson

pytestmark = pytest.mark.django_db


def test_setting_an_expiry_is_a_recorded_change_that_revert_undoes(memory):
    lesson = make_lesson(memory, "Skip the e2e suite until the 2.3 rollout reaches 100 %")
    services.lesson_set_expiry(
        lesson=lesson, expires_on=date(2026, 12, 1), expires_when="the 2.3 rollout reaches 100 %", actor=SYSTEM
    )
    lesson.refresh_from_db()
    assert (lesson.expires_on, lesson.expires_when) == (date(2026, 12, 1), "the 2.3 rollout reaches 100 %")
    change = Change.objects.filter(lesson=lesson).latest("id")
    assert "expires_on" not in change.before
    assert change.after["expires_on"] == "2026-12-01"
    labels = {f["label"]: f["after"] for f in snapshot_diff(change.before, change.after)["fields"]}
    assert labels == {"Expires on": "2026-12-01", "Holds until": "the 2.3 rollout reaches 100 %"}

    services.batch_revert(batch=change.batch, actor=SYSTEM)
    lesson.refresh_from_db()
    assert (lesson.expires_on, lesson.expires_when) == (None, "")


def test_clearing_the_expiry_restores_an_expired_lesson_and_can_itself_be_reverted(memory):
    lesson = make_lesson(memory, "Use the staging mirror for the migration week")
    services.lesson_set_expiry(lesson=lesson, expires_on=date(2026, 1, 8), actor=SYSTEM)
    restored = services.lesson_set_expiry(lesson=lesson, expires_on=None, expires_when="", actor=SYSTEM)
    assert restored.expires_on is None
    change = Change.objects.filter(lesson=lesson).latest("id")
    services.batch_revert(batch=change.batch, actor=SYSTEM)
    lesson.refresh_from_db()
    assert lesson.expires_on == date(2026, 1, 8)


def test_batches_recorded_before_lessons_had_an_expiry_stay_revertible(memory):
    lesson = make_lesson(memory, "Retries are capped at 3")
    services.lesson_update(lesson=lesson, text="Retries are capped at 5", actor=SYSTEM)
    change = Change.objects.filter(lesson=lesson).latest("id")
    # Snapshots of a lesson without an expiry carry no expiry keys: old history compares equal.
    assert "expires_on" not in change.after and "expires_when" not in change.after
    assert services.batch_revertible(change.batch)


def test_an_agent_cannot_date_a_core_lesson_but_a_person_can(memory, approver):
    core = make_lesson(memory, "Never log card numbers", tier="core", category="DECISION")
    with pytest.raises(PermissionDenied):
        services.lesson_set_expiry(lesson=core, expires_on=date(2027, 1, 1), actor=services.Actor.job("nightly"))
    core.refresh_from_db()
    assert core.expires_on is None
    with pytest.raises(PermissionDenied):
        make_lesson(memory, "Pin pydantic<2", tier="core", category="DECISION", expires_on=date(2027, 1, 1))

    person = services.Actor.for_user(approver)
    services.lesson_set_expiry(lesson=core, expires_on=date(2027, 1, 1), actor=person)
    core.refresh_from_db()
    assert core.expires_on == date(2027, 1, 1)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"expires_on": "2026-12-01"},
        {"expires_on": None, "expires_when": "x" * 301},
        {"expires_on": None, "expires_when": "two\nlines"},
        {"expires_on": None, "expires_when": "bad\x00byte"},
    ],
)
def test_bad_expiries_are_clear_errors_and_change_nothing(memory, kwargs):
    lesson = make_lesson(memory, "Use the old build image for now")
    changes = Change.objects.count()
    with pytest.raises(ValidationError):
        services.lesson_set_expiry(lesson=lesson, actor=SYSTEM, **kwargs)
    lesson.refresh_from_db()
    assert (lesson.expires_on, lesson.expires_when, Change.objects.count()) == (None, "", changes)


def test_a_retired_lesson_takes_no_expiry(memory):
    lesson = make_lesson(memory, "Old advice")
    services.lesson_delete(lesson=lesson, actor=SYSTEM)
    with pytest.raises(ValidationError):
        services.lesson_set_expiry(lesson=lesson, expires_on=date(2026, 12, 1), actor=SYSTEM)


def test_the_bulk_writer_writes_and_records_expiries(memory):
    batch = services.batch_create(memory=memory, kind=ChangeBatch.Kind.IMPORT, actor=SYSTEM)
    common = {"batch_id": batch.pk, "memory_id": memory.pk, "tier": "working", "category": "OBSERVATION"}
    ids = lessons_bulk_create(
        [
            NewLesson(
                **common, text="Freeze deploys", lesson_date=date(2026, 1, 1), section=1, expires_on=date(2026, 2, 1)
            ),
            NewLesson(**common, text="Plain lesson", lesson_date=date(2026, 1, 1), section=1),
            NewLesson(
                **common,
                text="Wait for upstream",
                lesson_date=date(2026, 1, 1),
                section=1,
                expires_when="#1234 is fixed",
            ),
        ]
    )
    got = {lesson.text: (lesson.expires_on, lesson.expires_when) for lesson in Lesson.objects.filter(pk__in=ids)}
    assert got == {
        "Freeze deploys": (date(2026, 2, 1), ""),
        "Plain lesson": (None, ""),
        "Wait for upstream": (None, "#1234 is fixed"),
    }
    snapshots = {c.after["text"]: c.after for c in Change.objects.filter(lesson_id__in=ids)}
    for lesson in Lesson.objects.filter(pk__in=ids).prefetch_related("refs"):
        assert services.lesson_snapshot(lesson) == snapshots[lesson.text]
