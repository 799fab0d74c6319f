"""OIDC sign-in against a real provider: the code flow with PKCE, teams from groups, the no-access page."""

from django.contrib.auth.models import User

from memory.sso.services import group_mapping_set
from personas.models import Membership, Team, TeamChange

from .conftest import sign_in


def test_sign_in_lands_home_with_the_teams_the_groups_map_to(client, provider, idp_user, db):
    red = Team.objects.create(name="Red", slug="red")
    blue = Team.objects.create(name="Blue", slug="blue")
    Team.objects.create(name="Green", slug="green")
    group_mapping_set(group="eng", team=red, role="curator")
    group_mapping_set(group="leads", team=blue, role="approver")
    person = idp_user("alice", groups=["eng", "leads"])

    response = sign_in(client, provider, person)

    assert response.status_code == 302, response.context and response.context.get("message")
    assert response["Location"] == "/"
    user = User.objects.get(idp_identity__subject="alice")
    assert user.email == "alice@example.org" and not user.has_usable_password()
    roles = {m.team.slug: (m.role, m.source) for m in Membership.objects.filter(user=user)}
    assert roles == {"red": ("curator", "oidc"), "blue": ("approver", "oidc")}
    assert TeamChange.objects.filter(team=red, detail__contains="from the identity provider at sign-in").exists()
    assert client.get("/").status_code == 200


def test_authorization_request_carries_pkce_state_and_nonce(client, provider, db):
    response = client.get("/accounts/sso/start/")
    location = response["Location"]
    assert location.startswith(provider.url.rstrip("/"))
    for part in ("code_challenge=", "code_challenge_method=S256", "state=", "nonce=", "response_type=code"):
        assert part in location


def test_groups_that_map_to_nothing_get_the_how_to_get_access_page(client, provider, idp_user, db):
    person = idp_user("bob", groups=["sales"])

    response = sign_in(client, provider, person)

    assert response["Location"] == "/accounts/sso/no-access/"
    page = client.get("/accounts/sso/no-access/")
    assert page.status_code == 200
    text = page.content.decode()
    assert "no access yet" in text and "sales" in text and "map_idp_group" in text


def test_hand_given_membership_survives_a_sign_in(client, provider, idp_user, db):
    red = Team.objects.create(name="Red", slug="red")
    blue = Team.objects.create(name="Blue", slug="blue")
    group_mapping_set(group="eng", team=red, role="viewer")
    person = idp_user("carol", groups=["eng"])
    sign_in(client, provider, person)
    user = User.objects.get(idp_identity__subject="carol")
    Membership.objects.create(team=blue, user=user, role="approver")  # by hand (the admin's default source)
    Membership.objects.filter(team=red, user=user).update(role="approver", source="manual")
    client.logout()

    sign_in(client, provider, person)

    roles = {m.team.slug: (m.role, m.source) for m in Membership.objects.filter(user=user)}
    assert roles == {"red": ("approver", "manual"), "blue": ("approver", "manual")}


def test_no_oidc_configured_shows_the_password_form_only(client, db):
    page = client.get("/accounts/login/").content.decode()
    assert "Sign in with" not in page and 'name="password"' in page
    assert client.get("/accounts/sso/start/").status_code == 404
