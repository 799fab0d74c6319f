"""One person, two roles: approver in one team, viewer in another. Each inbox card offers decisions
only where a decision would be allowed, and a bulk decision over both teams' candidates decides only
the team where the person approves, saying why the other was left."""

import pytest

from memory.models import PromotionCandidate
from memory.roles import ensure_role_groups
from personas.models import Membership, Team
from tests.factories import MemoryFactory, PersonaFactory, ProjectFactory, make_lesson

pytestmark = pytest.mark.django_db


def _candidate(label):
    team = Team.objects.create(name=f"Team {label}", slug=f"team-{label}")
    memory = MemoryFactory(
        persona=PersonaFactory(name=f"Persona-{label}", team=team),
        project=ProjectFactory(slug=f"project-{label}", team=team),
    )
    lesson = make_lesson(memory, f"Retry the {label} webhook with backoff")
    candidate = PromotionCandidate.objects.create(
        memory=memory, text=f"Core of {label}", category="PATTERN", evidence={}, fingerprint=label, engine="offline"
    )
    candidate.supporting.add(lesson)
    return team, candidate


@pytest.fixture
def lead(django_user_model):
    ensure_role_groups()
    (red, red_candidate), (blue, blue_candidate) = _candidate("red"), _candidate("blue")
    user = django_user_model.objects.create_user("lead")
    Membership.objects.create(team=red, user=user, role="approver")
    Membership.objects.create(team=blue, user=user, role="viewer")
    return user, red_candidate, blue_candidate


def _card(html, pk):
    start = html.index(f'id="candidate-{pk}"')
    return html[start : html.index("</article>", start)]


def test_cards_offer_decisions_only_in_the_team_where_the_person_approves(client, lead):
    user, red, blue = lead
    client.force_login(user)
    html = client.get("/promotions/").content.decode()
    red_card, blue_card = _card(html, red.pk), _card(html, blue.pk)
    assert f"/promotions/{red.pk}/approve/" in red_card and 'class="select-candidate' in red_card
    assert "/approve/" not in blue_card and 'class="select-candidate' not in blue_card
    assert "/reject/" not in blue_card


def test_a_bulk_decision_over_both_teams_decides_only_where_the_person_approves(client, lead):
    user, red, blue = lead
    client.force_login(user)
    response = client.post(
        "/promotions/bulk/",
        {"candidate": [red.pk, blue.pk], "action": "reject", "reason": "Not a lasting rule"},
        follow=True,
    )
    red.refresh_from_db()
    blue.refresh_from_db()
    assert red.status == PromotionCandidate.Status.REJECTED
    assert blue.status == PromotionCandidate.Status.PENDING
    assert f"Candidate #{blue.pk} needs the approver role in its team." in response.content.decode()
