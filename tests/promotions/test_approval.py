"""Approve, edit-then-approve, reject and revert, through the services."""

from datetime import date

import pytest
from django.core.exceptions import PermissionDenied, ValidationError

from memory import services
from memory.models import Change, ChangeBatch, Lesson, PromotionCandidate
from memory.promotions.services import (
    AlreadyDecided,
    NeedsReview,
    promotion_approve,
    promotion_detect,
    promotion_reject,
)
from memory.selectors import compile_memory
from tests.factories import SYSTEM, make_lesson

pytestmark = pytest.mark.django_db


def test_approve_creates_one_core_lesson_and_retires_the_working_ones(memory, candidate, approver):
    supporting = list(candidate.supporting.all())
    version = memory.version
    result = promotion_approve(candidate=candidate, actor=services.Actor.for_user(approver))

    core = result.core_lesson
    assert (core.tier, core.category, core.text, core.status) == ("core", candidate.category, candidate.text, "active")
    assert [r.as_text() for r in core.refs.all()] == candidate.refs
    assert set(core.derived_from.all()) == set(supporting)
    for lesson in supporting:
        lesson.refresh_from_db()
        assert lesson.status == "promoted"
    candidate.refresh_from_db()
    assert candidate.status == "approved" and candidate.decided_by == approver and not candidate.edited
    assert candidate.core_lesson == core
    batch = candidate.batch
    assert batch.kind == ChangeBatch.Kind.PROMOTION and batch.actor_user == approver
    assert batch.changes.count() == 1 + len(supporting)
    assert set(batch.changes.values_list("action", flat=True)) == {Change.Action.CREATE, Change.Action.PROMOTE}
    memory.refresh_from_db()
    assert memory.version > version
    compiled = compile_memory(memory).text
    assert candidate.text in compiled.split("## Working Memory")[0]
    assert not result.over_budget


def test_edit_then_approve_uses_the_edited_wording(memory, candidate, approver):
    result = promotion_approve(
        candidate=candidate,
        actor=services.Actor.for_user(approver),
        text="Verify Stripe webhook signatures before parsing any payload",
        category="DECISION",
        refs="src/billing/webhooks.py#L10-L30",
    )
    assert result.core_lesson.text == "Verify Stripe webhook signatures before parsing any payload"
    assert result.core_lesson.category == "DECISION"
    assert [r.as_text() for r in result.core_lesson.refs.all()] == ["src/billing/webhooks.py#L10-L30"]
    candidate.refresh_from_db()
    assert candidate.edited


@pytest.mark.parametrize(
    "edit",
    [
        {"text": "   "},
        {"text": "two\nlines"},
        {"category": "OBSERVATION"},
        {"refs": "not a ref (x)"},
        {"text": "x" * 2001},
    ],
)
def test_bad_edits_are_refused_and_change_nothing(memory, candidate, approver, edit):
    before = Lesson.objects.count(), ChangeBatch.objects.count()
    with pytest.raises(ValidationError):
        promotion_approve(candidate=candidate, actor=services.Actor.for_user(approver), **edit)
    candidate.refresh_from_db()
    assert candidate.status == "pending"
    assert (Lesson.objects.count(), ChangeBatch.objects.count()) == before


def test_second_approval_is_told_who_approved(memory, candidate, approver, django_user_model):
    from django.contrib.auth.models import Group

    other = django_user_model.objects.create_user("second", password="x")
    other.groups.add(Group.objects.get(name="approver"))
    promotion_approve(candidate=candidate, actor=services.Actor.for_user(approver))
    with pytest.raises(AlreadyDecided, match="already approved by approver"):
        promotion_approve(candidate=candidate, actor=services.Actor.for_user(other))
    assert Lesson.objects.filter(tier="core").count() == 1


def test_changed_supporting_lesson_asks_for_review(memory, candidate, approver):
    lesson = candidate.supporting.first()
    services.lesson_update(lesson=lesson, actor=SYSTEM, text="Webhook signatures are verified in middleware now")
    with pytest.raises(NeedsReview, match="was edited"):
        promotion_approve(candidate=candidate, actor=services.Actor.for_user(approver))
    candidate.refresh_from_db()
    assert candidate.status == "pending"
    assert not Lesson.objects.filter(tier="core").exists()


def test_deleted_supporting_lesson_asks_for_review(memory, candidate, approver):
    services.lesson_delete(lesson=candidate.supporting.first(), actor=SYSTEM)
    with pytest.raises(NeedsReview, match="deleted"):
        promotion_approve(candidate=candidate, actor=services.Actor.for_user(approver))


def test_over_budget_core_warns_and_cuts_nothing(memory, candidate, approver):
    memory.core_char_budget = 40
    memory.save()
    make_lesson(memory, "Deploys go through the release train in ops/release.md", tier="core", category="DECISION")
    result = promotion_approve(candidate=candidate, actor=services.Actor.for_user(approver))
    assert result.over_budget and result.core_chars > 40
    assert Lesson.objects.filter(memory=memory, tier="core", status="active").count() == 2
    assert result.core_lesson.text == candidate.text  # stored whole


def test_agents_and_jobs_cannot_approve_or_reject(memory, candidate, curator):
    for actor in (services.Actor.job("nightly"), services.Actor.system(), services.Actor.for_user(curator)):
        with pytest.raises(PermissionDenied):
            promotion_approve(candidate=candidate, actor=actor)
        with pytest.raises(PermissionDenied):
            promotion_reject(candidate=candidate, actor=actor, reason="no")
    candidate.refresh_from_db()
    assert candidate.status == "pending"


def test_reject_records_who_and_why_and_keeps_the_lessons(memory, candidate, approver):
    promotion_reject(candidate=candidate, actor=services.Actor.for_user(approver), reason="Already in the runbook")
    candidate.refresh_from_db()
    assert (candidate.status, candidate.decided_by, candidate.reason) == (
        "rejected",
        approver,
        "Already in the runbook",
    )
    assert candidate.decided_at is not None
    assert all(lesson.status == "active" for lesson in candidate.supporting.all())
    with pytest.raises(AlreadyDecided, match="already rejected by approver"):
        promotion_approve(candidate=candidate, actor=services.Actor.for_user(approver))


def test_reject_needs_a_reason(memory, candidate, approver):
    with pytest.raises(ValidationError):
        promotion_reject(candidate=candidate, actor=services.Actor.for_user(approver), reason="  ")
    candidate.refresh_from_db()
    assert candidate.status == "pending"


def test_revert_of_an_approval_restores_working_and_removes_core_as_one_change(memory, candidate, approver):
    result = promotion_approve(candidate=candidate, actor=services.Actor.for_user(approver))
    candidate.refresh_from_db()
    revert = services.batch_revert(batch=candidate.batch, actor=services.Actor.for_user(approver))
    assert revert.changes.count() == 1 + candidate.supporting.count()
    result.core_lesson.refresh_from_db()
    assert result.core_lesson.status == "deleted"  # soft: kept in history
    assert all(lesson.status == "active" for lesson in candidate.supporting.all())
    candidate.refresh_from_db()
    assert candidate.status == "reverted" and candidate.revert_batch == revert
    # The human undid it: detection does not propose the same group again without new evidence.
    assert promotion_detect(memory=memory).created == []
    assert PromotionCandidate.objects.filter(status="pending").count() == 0


def test_reverted_group_comes_back_with_a_new_confirming_lesson(memory, candidate, approver):
    promotion_approve(candidate=candidate, actor=services.Actor.for_user(approver))
    candidate.refresh_from_db()
    services.batch_revert(batch=candidate.batch, actor=services.Actor.for_user(approver))
    make_lesson(
        memory,
        "Stripe webhook payload is parsed only after its signature is verified",
        refs="src/billing/webhooks.py",
        day=date(2026, 3, 3),
    )
    assert len(promotion_detect(memory=memory).created) == 1
