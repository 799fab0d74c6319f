"""Deciding several promotion candidates at once, through the services: each candidate through the
single-candidate path (its own transaction and batch), the lot recorded as one bulk decision; two
leads deciding overlapping selections at once on separate database connections."""

import threading

import pytest
from django.contrib.auth.models import Group
from django.core.exceptions import ValidationError
from django.db import connections

from memory import services
from memory.models import ChangeBatch, Lesson, PromotionBulkDecision, PromotionCandidate
from memory.promotions.services import promotion_approve, promotion_bulk_decide
from memory.roles import ensure_role_groups
from tests.conftest import race_needs_postgres
from tests.promotions.conftest import pending_candidates as _pending


def _approver(django_user_model, name):
    ensure_role_groups()
    user = django_user_model.objects.create_user(name, password="x")
    user.groups.add(Group.objects.get(name="approver"))
    return user


def _actor(user):
    return services.Actor.for_user(user)


@pytest.mark.django_db
def test_bulk_approval_gives_each_candidate_its_own_revertible_batch(django_user_model):
    lead = _approver(django_user_model, "lead")
    first, second, third = _pending(3)
    outcome = promotion_bulk_decide(candidate_ids=[first.pk, second.pk], actor=_actor(lead), action="approve")
    assert outcome.decided == [first.pk, second.pk] and not (outcome.already or outcome.changed or outcome.refused)
    bulk = PromotionBulkDecision.objects.get()
    assert (bulk.action, bulk.decided_by, bulk.requested) == ("approve", lead, [first.pk, second.pk])
    assert bulk.outcome["decided"] == [first.pk, second.pk]
    first.refresh_from_db()
    second.refresh_from_db()
    third.refresh_from_db()
    assert first.status == second.status == "approved" and third.status == "pending"
    assert first.batch != second.batch and first.bulk == second.bulk == bulk
    assert f"bulk approval #{bulk.pk}" in first.batch.label
    # Reverting one approval leaves the other in place.
    services.batch_revert(batch=first.batch, actor=_actor(lead))
    first.refresh_from_db()
    second.refresh_from_db()
    assert first.status == "reverted" and second.status == "approved"
    assert Lesson.objects.filter(memory=first.memory, tier="core", status="active").count() == 0
    assert Lesson.objects.filter(memory=second.memory, tier="core", status="active").count() == 1


@pytest.mark.django_db
def test_bulk_rejection_keeps_one_reason_with_each_and_makes_no_batch(django_user_model):
    lead = _approver(django_user_model, "lead")
    cands = _pending(3)
    outcome = promotion_bulk_decide(
        candidate_ids=[c.pk for c in cands], actor=_actor(lead), action="reject", reason="Noise from the flaky CI week"
    )
    assert outcome.decided == [c.pk for c in cands]
    assert set(PromotionCandidate.objects.values_list("status", "reason", "bulk__action")) == {
        ("rejected", "Noise from the flaky CI week", "reject")
    }
    assert not ChangeBatch.objects.filter(kind="promotion").exists()
    assert Lesson.objects.filter(tier="working", status="active").count() == 9


@pytest.mark.django_db
@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"action": "reject", "reason": "  "}, "Say why"),
        ({"action": "delete"}, "Choose approve or reject"),
        ({"action": "approve", "candidate_ids": []}, "Select at least one candidate"),
        ({"action": "reject", "reason": "bad\x00reason"}, "reason"),
    ],
)
def test_a_bad_request_changes_nothing(django_user_model, kwargs, message):
    lead = _approver(django_user_model, "lead")
    (candidate,) = _pending(1)
    with pytest.raises(ValidationError) as caught:
        promotion_bulk_decide(**{"candidate_ids": [candidate.pk], "actor": _actor(lead), **kwargs})
    assert message in str(caught.value)
    assert PromotionCandidate.objects.get().status == "pending"
    assert not PromotionBulkDecision.objects.exists()


@pytest.mark.django_db
def test_the_report_names_who_decided_first_and_what_changed(django_user_model):
    lead, other = _approver(django_user_model, "lead"), _approver(django_user_model, "other")
    done, changed, fine = _pending(3)
    promotion_approve(candidate=done, actor=_actor(other))
    lesson = changed.supporting.first()
    services.lesson_update(lesson=lesson, actor=_actor(other), text=lesson.text + " (edited)")
    outcome = promotion_bulk_decide(
        candidate_ids=[done.pk, changed.pk, fine.pk, 999999], actor=_actor(lead), action="approve"
    )
    assert outcome.decided == [fine.pk]
    assert [(i["id"], i["status"], i["by"]) for i in outcome.already] == [(done.pk, "approved", "other")]
    assert [i["id"] for i in outcome.changed] == [changed.pk]
    assert "was edited" in outcome.changed[0]["message"]
    assert outcome.refused == [{"id": 999999, "message": "Candidate #999999 does not exist."}]
    assert PromotionCandidate.objects.get(pk=changed.pk).status == "pending"


def test_agents_and_viewers_cannot_bulk_decide(db, django_user_model):
    from django.core.exceptions import PermissionDenied

    ensure_role_groups()
    viewer = django_user_model.objects.create_user("v", password="x")
    viewer.groups.add(Group.objects.get(name="viewer"))
    (candidate,) = _pending(1)
    with pytest.raises(PermissionDenied):
        promotion_bulk_decide(candidate_ids=[candidate.pk], actor=_actor(viewer), action="approve")
    assert PromotionCandidate.objects.get().status == "pending"


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("actions", [("approve", "approve"), ("approve", "reject")])
def test_two_leads_deciding_overlapping_selections_at_once(django_user_model, actions):
    """Each lead's bulk decision runs in its own thread on its own connection; they start together."""
    race_needs_postgres()
    alice, bob = _approver(django_user_model, "alice"), _approver(django_user_model, "bob")
    cands = [c.pk for c in _pending(6)]
    selections = {"alice": cands[:4], "bob": cands[2:]}  # the middle two overlap
    users = {"alice": alice, "bob": bob}
    barrier = threading.Barrier(2)
    outcomes, errors = {}, {}

    def decide(name, action):
        try:
            barrier.wait(timeout=10)
            outcomes[name] = promotion_bulk_decide(
                candidate_ids=selections[name], actor=_actor(users[name]), action=action, reason=f"{name} says no"
            )
        except Exception as exc:  # surfaced by the assertion below
            errors[name] = repr(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=decide, args=(name, action)) for name, action in zip(("alice", "bob"), actions)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert errors == {}

    # Every candidate decided exactly once, by the one who was told it was theirs.
    decided_by = {}
    for name, outcome in outcomes.items():
        for pk in outcome.decided:
            assert pk not in decided_by, f"#{pk} decided twice"
            decided_by[pk] = name
    assert sorted(decided_by) == sorted(cands)
    rows = {
        pk: (status, who)
        for pk, status, who in PromotionCandidate.objects.values_list("pk", "status", "decided_by_label")
    }
    for pk, name in decided_by.items():
        assert rows[pk][1] == name
        assert rows[pk][0] == ("approved" if actions[("alice", "bob").index(name)] == "approve" else "rejected")
    # Each lead is told which of theirs the other decided first, and by whom.
    for name, other in (("alice", "bob"), ("bob", "alice")):
        told = {item["id"]: item["by"] for item in outcomes[name].already}
        assert told == {pk: other for pk in selections[name] if decided_by[pk] == other}
        assert not outcomes[name].changed and not outcomes[name].refused
    # One core lesson per approved candidate, never two.
    approved = [pk for pk, (status, _) in rows.items() if status == "approved"]
    assert Lesson.objects.filter(tier="core").count() == len(approved)
    assert PromotionBulkDecision.objects.count() == 2
