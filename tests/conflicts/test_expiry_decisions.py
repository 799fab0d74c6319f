"""A person's decisions on temporary lessons: proposed expiries accepted (as proposed or edited) or
rejected, expired lessons restored or retired; each one batch that revert undoes."""

from datetime import date, timedelta

import pytest
import time_machine
from django.core.exceptions import PermissionDenied, ValidationError
from django.utils import timezone

from memory import services
from memory.access import EVERY_MEMORY
from memory.conflicts.expiries import (
    expired_lesson_restore,
    expired_lesson_retire,
    expiries_bulk_decide,
    expiry_accept,
    expiry_reject,
)
from memory.models import Change, ChangeBatch, ExpiryProposal, Lesson, LessonStatus, WebhookEvent
from memory.review_queue import counts_by_source, overdue, totals_by_source, waiting_items
from memory.selectors import compile_memory
from tests.conflicts.expiry_helpers import propose
from tests.factories import SYSTEM, make_lesson

pytestmark = pytest.mark.django_db


def _person(user):
    return services.Actor.for_user(user)


def test_accepting_sets_the_proposed_expiry_in_one_batch_that_revert_undoes(memory, approver):
    proposal = propose(memory, "Skip the e2e suite until the 2.3 rollout reaches 100 %.")
    assert proposal.expires_when and proposal.expires_on is None

    expiry_accept(proposal=proposal, actor=_person(approver), reason="rollout tracked in OPS-12")
    proposal.refresh_from_db()
    lesson = Lesson.objects.get(pk=proposal.lesson_id)
    assert proposal.status == "accepted" and proposal.decided_by == approver and proposal.batch is not None
    assert lesson.expires_when == proposal.expires_when
    assert list(proposal.batch.changes.values_list("lesson_id", flat=True)) == [lesson.pk]
    assert proposal.batch.reason == "rollout tracked in OPS-12"

    services.batch_revert(batch=proposal.batch, actor=_person(approver))
    proposal.refresh_from_db()
    lesson.refresh_from_db()
    assert (lesson.expires_on, lesson.expires_when) == (None, "")
    assert (proposal.status, proposal.batch, proposal.decided_by, proposal.decided_at) == ("pending", None, None, None)
    # Waiting again, it can be decided again.
    expiry_reject(proposal=proposal, actor=_person(approver))
    assert ExpiryProposal.objects.get(pk=proposal.pk).status == "rejected"


def test_a_reviewer_may_edit_the_date_and_the_condition_before_accepting(memory, approver):
    proposal = propose(memory, "Use the staging mirror until 2026-12-24.")
    assert proposal.expires_on == date(2026, 12, 24)
    expiry_accept(
        proposal=proposal, actor=_person(approver), expires_on=date(2027, 1, 8), expires_when="the mirror is retired"
    )
    lesson = Lesson.objects.get(pk=proposal.lesson_id)
    assert (lesson.expires_on, lesson.expires_when) == (date(2027, 1, 8), "the mirror is retired")


@pytest.mark.parametrize(
    "edit, message",
    [
        ({"expires_on": None, "expires_when": ""}, "needs a date or a condition"),
        ({"expires_when": "x" * 301}, "expires_when"),
        ({"expires_when": "two\nlines"}, "expires_when"),
        ({"expires_on": "2026-12-01"}, "must be a date"),
    ],
)
def test_bad_edits_are_refused_and_change_nothing(memory, approver, edit, message):
    proposal = propose(memory, "Pin urllib3 below 2 and remove the pin after upstream fixes #1234.")
    before = (Change.objects.count(), ChangeBatch.objects.count(), WebhookEvent.objects.count())
    with pytest.raises(ValidationError) as exc:
        expiry_accept(proposal=proposal, actor=_person(approver), **edit)
    assert message in str(exc.value)
    proposal.refresh_from_db()
    lesson = Lesson.objects.get(pk=proposal.lesson_id)
    assert proposal.status == "pending" and (lesson.expires_on, lesson.expires_when) == (None, "")
    assert (Change.objects.count(), ChangeBatch.objects.count(), WebhookEvent.objects.count()) == before


def test_a_decided_proposal_cannot_be_decided_twice(memory, approver):
    proposal = propose(memory, "Keep the feature flag on until 2026-12-31.")
    expiry_reject(proposal=proposal, actor=_person(approver))
    with pytest.raises(ValidationError, match="already rejected"):
        expiry_accept(proposal=proposal, actor=_person(approver))
    assert Lesson.objects.get(pk=proposal.lesson_id).expires_on is None


def test_a_proposal_on_a_core_lesson_takes_effect_only_on_a_persons_accept(memory, approver):
    proposal = propose(memory, "Deploys are frozen until 2026-12-31.", tier="core", category="DECISION")
    lesson = Lesson.objects.get(pk=proposal.lesson_id)
    assert lesson.expires_on is None  # detection only proposes
    for actor in (SYSTEM, services.Actor.job("nightly")):
        with pytest.raises(PermissionDenied):
            expiry_accept(proposal=proposal, actor=actor)
        lesson.refresh_from_db()
        assert lesson.expires_on is None and ExpiryProposal.objects.get(pk=proposal.pk).status == "pending"
    expiry_accept(proposal=proposal, actor=_person(approver))
    lesson.refresh_from_db()
    assert lesson.expires_on == date(2026, 12, 31)


def test_bulk_decides_each_in_its_own_batch_and_lists_refusals(memory, approver):
    first = propose(memory, "Build with the old image until 2026-12-20.")
    second = propose(memory, "Serve the banner until 2026-12-22.")
    core = propose(memory, "Releases freeze until 2026-12-28.", tier="core", category="DECISION")
    expiry_reject(proposal=second, actor=_person(approver))  # decided meanwhile
    decided, refused = expiries_bulk_decide(
        proposals=[first, second, core], decision="accept", actor=services.Actor.job("bulk")
    )
    assert decided == 1
    assert refused == [
        f"Proposed expiry {second.pk}: this proposed expiry is already rejected",
        f"Proposed expiry {core.pk}: a core lesson expires only by a person's decision",
    ]
    first.refresh_from_db()
    assert first.status == "accepted" and Lesson.objects.get(pk=first.lesson_id).expires_on == date(2026, 12, 20)

    third = propose(memory, "Route reports to the old bucket until 2026-12-23.")
    decided, refused = expiries_bulk_decide(proposals=[core, third], decision="accept", actor=_person(approver))
    assert (decided, refused) == (2, [])
    batches = set(ExpiryProposal.objects.filter(pk__in=[core.pk, third.pk]).values_list("batch_id", flat=True))
    assert len(batches) == 2 and None not in batches
    with pytest.raises(ValidationError):
        expiries_bulk_decide(proposals=[], decision="maybe", actor=_person(approver))


def test_decisions_are_announced_to_the_team(memory, approver):
    proposal = propose(memory, "Use the fallback CDN until the 4.1 release ships.")
    waiting = WebhookEvent.objects.get(type="review.waiting")
    assert waiting.data["items"][0]["kind"] == "expiry" and waiting.memory_id == memory.pk
    assert waiting.lesson_texts == {str(proposal.pk): proposal.lesson.text}
    expiry_accept(proposal=proposal, actor=_person(approver))
    decided = WebhookEvent.objects.get(type="review.decided")
    assert decided.data["decision"] == "accepted" and decided.data["by"] == "approver"


def _expired(memory, text="Use the staging mirror for the migration week.", *, on=None, **kwargs):
    lesson = make_lesson(memory, text, **kwargs)
    return services.lesson_set_expiry(
        lesson=lesson, expires_on=on or timezone.localdate() - timedelta(days=1), actor=SYSTEM
    )


def test_an_expired_lesson_is_restored_by_clearing_or_moving_its_date_and_revert_expires_it_again(memory, approver):
    lesson = _expired(memory)
    assert "staging mirror" not in compile_memory(memory).text
    restored = expired_lesson_restore(lesson=lesson, actor=_person(approver))
    assert restored.expires_on is None and "staging mirror" in compile_memory(memory).text
    batch = Change.objects.filter(lesson=lesson).latest("id").batch
    assert batch.label == "Expiry: restored an expired lesson"
    services.batch_revert(batch=batch, actor=_person(approver))
    lesson.refresh_from_db()
    assert lesson.is_expired and "staging mirror" not in compile_memory(memory).text

    later = timezone.localdate() + timedelta(days=10)
    moved = expired_lesson_restore(lesson=lesson, actor=_person(approver), expires_on=later)
    assert moved.expires_on == later and not moved.is_expired
    with pytest.raises(ValidationError, match="not an expired live lesson"):
        expired_lesson_restore(lesson=lesson, actor=_person(approver))


def test_restoring_to_a_day_that_is_not_ahead_is_refused(memory, approver):
    lesson = _expired(memory)
    changes = Change.objects.count()
    with pytest.raises(ValidationError, match="day after today"):
        expired_lesson_restore(lesson=lesson, actor=_person(approver), expires_on=timezone.localdate())
    assert Change.objects.count() == changes and Lesson.objects.get(pk=lesson.pk).is_expired


def test_retiring_deletes_softly_and_revert_brings_it_back_expired(memory, approver):
    lesson = _expired(memory)
    retired = expired_lesson_retire(lesson=lesson, actor=_person(approver), reason="migration done")
    assert retired.status == LessonStatus.DELETED
    batch = Change.objects.filter(lesson=lesson).latest("id").batch
    services.batch_revert(batch=batch, actor=_person(approver))
    lesson.refresh_from_db()
    assert lesson.status == LessonStatus.ACTIVE and lesson.is_expired
    protected = _expired(memory, "Keep the legacy webhook until 2026-01-01.", protected=True)
    with pytest.raises(PermissionDenied):
        expired_lesson_retire(lesson=protected, actor=_person(approver))


def test_proposals_and_expired_lessons_wait_in_the_review_queue_team_scoped(memory, team_memory, settings):
    other = team_memory("other")
    propose(memory, "Skip the flaky suite until the 2.3 rollout reaches 100 %.")
    with time_machine.travel(timezone.now() - timedelta(days=10)):
        propose(other, "Skip the load test until the 5.0 release ships.")
    expired = _expired(memory, on=timezone.localdate() - timedelta(days=settings.REVIEW_OVERDUE_DAYS + 2))
    _expired(other)
    make_lesson(memory, "Not temporary at all.")

    totals = totals_by_source(EVERY_MEMORY)
    assert (totals["expiries"], totals["expired"]) == (2, 2)
    mine = counts_by_source([memory.pk])
    assert (mine["expiries"], mine["expired"]) == ({memory.pk: 1}, {memory.pk: 1})
    late = overdue([memory.pk])
    assert {e.source.key: e.count for e in late.entries} == {"expired": 1}
    assert {e.source.key: e.count for e in overdue([other.pk]).entries} == {"expiries": 1}
    items = waiting_items([memory.pk])
    assert [i.status for i in items] == ["expired lesson", "proposed expiry"]  # oldest first
    assert f"expired-{expired.pk}" in items[0].url

    # Acting takes them off the queue: restored, retired or decided.
    expired_lesson_restore(lesson=expired, actor=SYSTEM)
    assert counts_by_source([memory.pk])["expired"] == {}


def test_long_expired_lessons_and_old_proposals_are_in_the_daily_overdue_event(memory, settings):
    from memory.webhooks.services import webhooks_record_overdue

    days = settings.REVIEW_OVERDUE_DAYS
    with time_machine.travel(timezone.now() - timedelta(days=days + 1)):
        proposal = propose(memory, "Skip the load test until the 5.0 release ships.")
    expired = _expired(memory, on=timezone.localdate() - timedelta(days=days + 3))
    _expired(memory, "Expired yesterday, not late yet.")
    WebhookEvent.objects.all().delete()
    assert webhooks_record_overdue() == 1
    event = WebhookEvent.objects.get(type="review.overdue")
    items = {i["kind"]: i for i in event.data["items"]}
    assert {kind: i["id"] for kind, i in items.items()} == {
        "expired lesson": expired.pk,
        "proposed expiry": proposal.pk,
    }
    assert items["expired lesson"]["waiting_since"].startswith(expired.expires_on.isoformat())
