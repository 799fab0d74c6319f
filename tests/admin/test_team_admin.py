"""Teams in the admin: a site administrator makes teams; a team's approver manages its members and
only their own teams' personas, projects and agent tokens. Every change is in the team's history."""

import pytest
from django.contrib.auth.models import Group

from memory.models import AgentToken
from memory.roles import ensure_role_groups
from personas.models import Membership, Team, TeamChange
from tests.factories import PersonaFactory, ProjectFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def teams(django_user_model):
    ensure_role_groups()
    alpha, beta = Team.objects.create(name="Alpha", slug="alpha"), Team.objects.create(name="Beta", slug="beta")
    lead = django_user_model.objects.create_user("alpha-lead", is_staff=True)
    Membership.objects.create(team=alpha, user=lead, role="approver")
    return alpha, beta, lead


def _token(persona, prefix):
    return AgentToken.objects.create(persona=persona, prefix=prefix, token_hash=prefix * 8)


def test_team_approver_sees_only_their_teams_rows(client, teams):
    alpha, beta, lead = teams
    mine, theirs = PersonaFactory(name="Mine", team=alpha), PersonaFactory(name="Theirs", team=beta)
    ProjectFactory(name="Alpha repo", slug="alpha-repo", team=alpha)
    other_project = ProjectFactory(name="Beta repo", slug="beta-repo", team=beta)
    _token(mine, "mine1234"), _token(theirs, "their123")
    client.force_login(lead)
    personas = client.get("/admin/personas/persona/").content.decode()
    assert "Mine" in personas and "Theirs" not in personas
    projects = client.get("/admin/personas/project/").content.decode()
    assert "Alpha repo" in projects and "Beta repo" not in projects
    tokens = client.get("/admin/memory/agenttoken/").content.decode()
    assert "mine1234" in tokens and "their123" not in tokens
    teams_page = client.get("/admin/personas/team/").content.decode()
    assert "Alpha" in teams_page and "Beta" not in teams_page
    # Another team's rows are not there at all: the admin sends the person back without showing them.
    for url in (
        f"/admin/personas/persona/{theirs.pk}/change/",
        f"/admin/personas/project/{other_project.pk}/change/",
        f"/admin/personas/team/{beta.pk}/change/",
    ):
        response = client.get(url)
        assert response.status_code == 302 and "Theirs" not in response.content.decode(), url
    # Nor can a persona be moved into a team the lead does not approve in.
    response = client.post(
        "/admin/personas/project/add/",
        {
            "slug": "sneaky",
            "name": "Sneaky",
            "team": beta.pk,
            "repository_ref": "main",
            "created_at_0": "2026-01-01",
            "created_at_1": "10:00:00",
        },
    )
    assert response.status_code == 200 and "Select a valid choice" in response.content.decode()


def test_site_admin_creates_a_team_adds_members_and_moves_a_project(admin_client, admin_user, django_user_model, teams):
    alpha, _beta, _lead = teams
    newcomer = django_user_model.objects.create_user("newcomer")
    response = admin_client.post(
        "/admin/personas/team/add/",
        {
            "name": "Gamma",
            "slug": "gamma",
            "memberships-TOTAL_FORMS": "1",
            "memberships-INITIAL_FORMS": "0",
            "memberships-0-user": newcomer.pk,
            "memberships-0-role": "curator",
            "changes-TOTAL_FORMS": "0",
            "changes-INITIAL_FORMS": "0",
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    gamma = Team.objects.get(slug="gamma")
    assert Membership.objects.get(team=gamma).role == "curator"
    project = ProjectFactory(name="Moving repo", slug="moving", team=alpha)
    response = admin_client.post(
        f"/admin/personas/project/{project.pk}/change/",
        {
            "slug": "moving",
            "name": "Moving repo",
            "team": gamma.pk,
            "repository_ref": "main",
            "created_at_0": "2026-01-01",
            "created_at_1": "10:00:00",
        },
    )
    assert response.status_code == 302, response.context["adminform"].form.errors
    history = list(TeamChange.objects.order_by("id").values_list("team__slug", "action", "by__username"))
    assert history == [
        ("gamma", "team created", "admin"),
        ("gamma", "member added", "admin"),
        ("alpha", "project moved out", "admin"),
        ("gamma", "project moved in", "admin"),
    ]
    assert all(change.at is not None for change in TeamChange.objects.all())


def test_team_approver_removes_a_member_and_it_is_recorded(client, django_user_model, teams):
    alpha, _, lead = teams
    member = django_user_model.objects.create_user("member")
    membership = Membership.objects.create(team=alpha, user=member, role="viewer")
    lead_membership = Membership.objects.get(user=lead)
    client.force_login(lead)
    response = client.post(
        f"/admin/personas/team/{alpha.pk}/change/",
        {
            "memberships-TOTAL_FORMS": "2",
            "memberships-INITIAL_FORMS": "2",
            "memberships-0-id": lead_membership.pk,
            "memberships-0-team": alpha.pk,
            "memberships-0-user": lead.pk,
            "memberships-0-role": "approver",
            "memberships-1-id": membership.pk,
            "memberships-1-team": alpha.pk,
            "memberships-1-user": member.pk,
            "memberships-1-role": "viewer",
            "memberships-1-DELETE": "on",
            "changes-TOTAL_FORMS": "0",
            "changes-INITIAL_FORMS": "0",
        },
    )
    assert response.status_code == 302, response.content.decode()[:3000]
    assert not Membership.objects.filter(user=member).exists()
    change = TeamChange.objects.get(action="member removed")
    assert change.by == lead and "member" in change.detail and change.team == alpha


def test_site_wide_group_still_means_every_team(client, django_user_model, teams):
    """A one-team install needs no set-up: the site-wide groups keep working as before."""
    alpha, beta, _ = teams
    viewer = django_user_model.objects.create_user("site-viewer")
    viewer.groups.add(Group.objects.get(name="viewer"))
    from tests.factories import MemoryFactory

    a = MemoryFactory(persona=PersonaFactory(name="Pa", team=alpha), project=ProjectFactory(slug="pa", team=alpha))
    b = MemoryFactory(persona=PersonaFactory(name="Pb", team=beta), project=ProjectFactory(slug="pb", team=beta))
    client.force_login(viewer)
    html = client.get("/").content.decode()
    assert a.get_absolute_url() in html and b.get_absolute_url() in html
