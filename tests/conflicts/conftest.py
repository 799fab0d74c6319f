from datetime import date

import pytest

from memory.conflicts.services import conflicts_detect
from memory.models import LessonConflict
from tests.factories import make_lesson

HTMX = {"HX-Request": "true"}


def make_conflict(memory, n=0, *, old="celery", new="dramatiq", refs=None, tier="working", category="OBSERVATION"):
    """One pending conflict in `memory`: queue n runs with `old` (January), then with `new` (March)."""
    older = make_lesson(
        memory, f"Queue {n} workers run with {old}.", day=date(2026, 1, 5), refs=refs, tier=tier, category=category
    )
    newer = make_lesson(memory, f"Queue {n} workers run with {new}.", day=date(2026, 3, 2))
    conflicts_detect(memory=memory, lesson_ids=[newer.pk])
    return LessonConflict.objects.get(older=older, newer=newer)


@pytest.fixture
def conflict(memory):
    return make_conflict(memory, refs="src/queue/worker.py#L10-L12")


@pytest.fixture
def team_member(db, django_user_model):
    """team_member(username, {team: role, …}) -> a person with those roles in those teams only."""
    from memory.roles import ensure_role_groups
    from personas.models import Membership

    def make(username, roles):
        ensure_role_groups()
        user = django_user_model.objects.create_user(username, password="pw-for-tests-1")
        for team, role in roles.items():
            Membership.objects.create(team=team, user=user, role=role)
        return user

    return make
