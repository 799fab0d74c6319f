"""The helpers other views use to scope themselves: memory_for_user_or_404, scope, get_for_user_or_404."""

import pytest
from django.core.exceptions import PermissionDenied
from django.http import Http404

from memory.access import APPROVE, CURATE, VIEW, can, memory_for_user_or_404, scope, visible_memories
from memory.models import Lesson
from personas.models import Membership, Team
from tests.factories import MemoryFactory, PersonaFactory, ProjectFactory, make_lesson

pytestmark = pytest.mark.django_db


@pytest.fixture
def two_teams(django_user_model):
    red, blue = Team.objects.create(name="Red", slug="red"), Team.objects.create(name="Blue", slug="blue")
    red_memory = MemoryFactory(persona=PersonaFactory(team=red), project=ProjectFactory(slug="r", team=red))
    blue_memory = MemoryFactory(persona=PersonaFactory(team=blue), project=ProjectFactory(slug="b", team=blue))
    curator = django_user_model.objects.create_user("red-curator")
    Membership.objects.create(team=red, user=curator, role="curator")
    return red_memory, blue_memory, curator


def test_memory_for_user_or_404_gives_the_memory_or_404_or_403(two_teams):
    red, blue, curator = two_teams
    assert memory_for_user_or_404(curator, pk=red.pk, action=CURATE).persona.name == red.persona.name
    with pytest.raises(Http404):
        memory_for_user_or_404(curator, pk=blue.pk, action=CURATE)  # another team's memory is not found
    with pytest.raises(PermissionDenied):
        memory_for_user_or_404(curator, pk=red.pk, action=APPROVE)  # their own team's, but a curator cannot approve


def test_scope_filters_anything_hanging_off_a_memory(two_teams):
    red, blue, curator = two_teams
    mine = make_lesson(red, "Red lesson")
    make_lesson(blue, "Blue lesson")  # another team's: scope leaves it out
    assert list(scope(Lesson.objects.all(), curator)) == [mine]
    assert list(scope(Lesson.objects.all(), curator, APPROVE)) == []
    assert list(visible_memories(curator)) == [red]
    assert can(curator, CURATE, red) and not can(curator, VIEW, blue) and not can(curator, APPROVE, red)
