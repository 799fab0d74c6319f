"""Two approvers clicking at the same moment, on two database connections: exactly one core lesson."""

import threading
from datetime import date

import pytest
from django.contrib.auth.models import Group
from django.db import connections

from memory import services
from memory.models import Lesson, PromotionCandidate
from memory.promotions.services import AlreadyDecided, promotion_approve, promotion_detect
from tests.conftest import race_needs_postgres
from tests.factories import make_lesson
from tests.promotions.conftest import THEME


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_two_approvers_at_once_make_exactly_one_core_lesson(memory, django_user_model):
    race_needs_postgres()

    for i, (text, ref) in enumerate(THEME):
        make_lesson(memory, text, refs=ref, day=date(2026, 1, 1 + i))
    (candidate,) = promotion_detect(memory=memory).created
    from memory.roles import ensure_role_groups

    ensure_role_groups()
    approvers = []
    for name in ("alice", "bob"):
        user = django_user_model.objects.create_user(name, password="x")
        user.groups.add(Group.objects.get(name="approver"))
        approvers.append(user)

    barrier = threading.Barrier(2)
    outcomes = {}

    def click(user):
        try:
            barrier.wait(timeout=10)
            result = promotion_approve(candidate=candidate, actor=services.Actor.for_user(user))
            outcomes[user.username] = ("approved", result.core_lesson.pk)
        except AlreadyDecided as exc:
            outcomes[user.username] = ("refused", str(exc))
        except Exception as exc:  # surfaced by the assertions below
            outcomes[user.username] = ("error", repr(exc))
        finally:
            connections.close_all()

    threads = [threading.Thread(target=click, args=(u,)) for u in approvers]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)

    kinds = sorted(kind for kind, _ in outcomes.values())
    assert kinds == ["approved", "refused"], outcomes
    winner = next(name for name, (kind, _) in outcomes.items() if kind == "approved")
    loser_message = next(msg for kind, msg in outcomes.values() if kind == "refused")
    assert f"already approved by {winner}" in loser_message
    assert Lesson.objects.filter(memory=memory, tier="core").count() == 1
    candidate.refresh_from_db()
    assert candidate.status == "approved" and candidate.decided_by.username == winner
    assert PromotionCandidate.objects.get(pk=candidate.pk).batch.changes.count() == 4
