"""SCIM provisioning as Entra ID and Okta send it: people created, patched (filtered member paths) and replaced,
groups pushed; team roles follow at once, sessions end at once, and hand-given memberships stay."""

import json

import pytest
from django.contrib.auth.models import User

from memory.sso.models import IdpIdentity
from memory.sso.services import group_mapping_set, scim_token_create
from personas.models import Membership, Team, TeamChange

USER = "urn:ietf:params:scim:schemas:core:2.0:User"
GROUP = "urn:ietf:params:scim:schemas:core:2.0:Group"
PATCH = "urn:ietf:params:scim:api:messages:2.0:PatchOp"


@pytest.fixture
def scim(client, db):
    _, raw = scim_token_create(name="idp")

    def call(method, path, body=None, token=raw):
        headers = {"HTTP_AUTHORIZATION": f"Bearer {token}"} if token else {}
        response = getattr(client, method.lower())(
            f"/scim/v2{path}",
            data=json.dumps(body) if body is not None else None,
            content_type="application/scim+json",
            **headers,
        )
        return response.status_code, (json.loads(response.content) if response.content else None)

    return call


def _user(scim, name, active=True):
    status, body = scim(
        "POST",
        "/Users",
        {
            "schemas": [USER],
            "userName": name,
            "externalId": f"ext-{name}",
            "name": {"givenName": name.capitalize(), "familyName": "Tester"},
            "emails": [{"value": f"{name}@example.org", "primary": True, "type": "work"}],
            "active": active,
        },
    )
    assert status == 201, body
    return body["id"]


def _group(scim, name, members=()):
    status, body = scim(
        "POST", "/Groups", {"schemas": [GROUP], "displayName": name, "members": [{"value": m} for m in members]}
    )
    assert status == 201, body
    return body["id"]


def _roles(username):
    return {m.team.slug: (m.role, m.source) for m in Membership.objects.filter(user__username=username)}


def test_only_the_scim_bearer_token_is_accepted(scim, client, db):
    from memory.tokens import agent_token_create
    from personas.models import Persona

    assert scim("GET", "/Users", token=None)[0] == 401
    assert scim("GET", "/Users", token="scim_not-a-token")[0] == 401
    _, agent_raw = agent_token_create(persona=Persona.objects.create(name="Ada"), project=None, name="agent")
    assert scim("GET", "/Users", token=agent_raw)[0] == 401
    client.force_login(User.objects.create_superuser("root", password="pw-for-tests-1"))
    assert scim("GET", "/ServiceProviderConfig", token=None)[0] == 401
    assert scim("GET", "/Users")[0] == 200


def test_no_scim_token_made_means_scim_refuses(client, db):
    assert client.get("/scim/v2/Users", HTTP_AUTHORIZATION="Bearer anything").status_code == 401


def test_group_push_gives_team_roles_and_a_filtered_remove_takes_them_away(scim, db):
    red = Team.objects.create(name="Red", slug="red")
    group_mapping_set(group="Engineering", team=red, role="curator")
    lena = _user(scim, "lena")
    mo = _user(scim, "mo")
    group = _group(scim, "Engineering", [lena])
    assert _roles("lena") == {"red": ("curator", "scim")}

    # Okta and Entra add members with a PATCH "add" on members.
    status, _ = scim(
        "PATCH",
        f"/Groups/{group}",
        {"schemas": [PATCH], "Operations": [{"op": "add", "path": "members", "value": [{"value": mo}]}]},
    )
    assert status in (200, 204)
    assert _roles("mo") == {"red": ("curator", "scim")}

    # ... and remove one with a filtered path.
    op = {"op": "remove", "path": f'members[value eq "{lena}"]'}
    status, _ = scim("PATCH", f"/Groups/{group}", {"schemas": [PATCH], "Operations": [op]})
    assert status in (200, 204)
    assert _roles("lena") == {}
    assert _roles("mo") == {"red": ("curator", "scim")}
    assert TeamChange.objects.filter(team=red, detail__contains="from SCIM provisioning").count() == 3


def test_entra_style_patch_and_okta_style_put_update_a_person(scim, db):
    uid = _user(scim, "nina")
    # Entra ID: capitalised op names and a string "False" for a boolean.
    entra = {
        "schemas": [PATCH],
        "Operations": [
            {"op": "Replace", "path": "name.familyName", "value": "Changed"},
            {"op": "Replace", "path": 'emails[type eq "work"].value', "value": "nina.new@example.org"},
        ],
    }
    status, body = scim("PATCH", f"/Users/{uid}", entra)
    assert status in (200, 204), body
    user = User.objects.get(username="nina")
    assert (user.last_name, user.email) == ("Changed", "nina.new@example.org")

    # Okta: PUT of the whole person.
    okta = {
        "schemas": [USER],
        "userName": "nina",
        "name": {"givenName": "Nina", "familyName": "Okta"},
        "emails": [{"value": "nina@okta.example", "primary": True}],
        "active": True,
    }
    status, body = scim("PUT", f"/Users/{uid}", okta)
    assert status == 200, body
    user.refresh_from_db()
    assert (user.last_name, user.email, user.is_active) == ("Okta", "nina@okta.example", True)

    entra_off = {"schemas": [PATCH], "Operations": [{"op": "Replace", "path": "active", "value": "False"}]}
    status, body = scim("PATCH", f"/Users/{uid}", entra_off)
    assert status in (200, 204), body
    user.refresh_from_db()
    assert not user.is_active

    status, body = scim("GET", '/Users?filter=userName eq "nina"')
    assert status == 200 and body["totalResults"] == 1 and body["Resources"][0]["id"] == uid


def test_deactivation_ends_a_live_session_on_its_next_request(scim, client, db):
    red = Team.objects.create(name="Red", slug="red")
    group_mapping_set(group="Engineering", team=red, role="viewer")
    uid = _user(scim, "omar")
    _group(scim, "Engineering", [uid])
    browser = type(client)()
    browser.force_login(User.objects.get(username="omar"), backend="memory.sso.oidc.OidcBackend")
    assert browser.get("/").status_code == 200

    patch = {"schemas": [PATCH], "Operations": [{"op": "replace", "value": {"active": False}}]}
    status, _ = scim("PATCH", f"/Users/{uid}", patch)
    assert status in (200, 204)

    response = browser.get("/")
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


def test_removing_from_a_group_takes_the_role_away_on_the_next_request(scim, client, db):
    red = Team.objects.create(name="Red", slug="red")
    group_mapping_set(group="Engineering", team=red, role="viewer")
    uid = _user(scim, "pia")
    group = _group(scim, "Engineering", [uid])
    browser = type(client)()
    browser.force_login(User.objects.get(username="pia"), backend="memory.sso.oidc.OidcBackend")
    assert browser.get("/").status_code == 200

    scim(
        "PATCH",
        f"/Groups/{group}",
        {"schemas": [PATCH], "Operations": [{"op": "remove", "path": f'members[value eq "{uid}"]'}]},
    )

    assert browser.get("/").status_code == 403


def test_hand_given_membership_survives_a_group_push(scim, db):
    red = Team.objects.create(name="Red", slug="red")
    blue = Team.objects.create(name="Blue", slug="blue")
    group_mapping_set(group="Engineering", team=red, role="viewer")
    group_mapping_set(group="Leads", team=blue, role="approver")
    uid = _user(scim, "quinn")
    user = User.objects.get(username="quinn")
    Membership.objects.create(team=blue, user=user, role="curator")  # by hand
    group = _group(scim, "Engineering", [uid])
    _group(scim, "Leads", [uid])
    scim("PUT", f"/Groups/{group}", {"schemas": [GROUP], "displayName": "Engineering", "members": []})

    assert _roles("quinn") == {"blue": ("curator", "manual")}


def test_deleting_a_person_deactivates_the_account_and_keeps_its_name(scim, db):
    uid = _user(scim, "rita")
    assert scim("DELETE", f"/Users/{uid}")[0] == 204
    assert scim("GET", f"/Users/{uid}")[0] == 404
    user = User.objects.get(username="rita")
    assert not user.is_active
    assert IdpIdentity.objects.get(user=user).scim_resource is None


def test_a_superuser_account_is_never_taken_over(scim, db):
    User.objects.create_superuser("root", password="pw-for-tests-1")
    status, _ = scim("POST", "/Users", {"schemas": [USER], "userName": "root", "active": False})
    assert status == 409
    assert User.objects.get(username="root").is_active


def test_a_provisioned_person_signs_in_and_a_scim_deactivation_ends_that_session(scim, client, provider, idp_user, db):
    from .conftest import sign_in

    red = Team.objects.create(name="Red", slug="red")
    group_mapping_set(group="Engineering", team=red, role="viewer")
    uid = _user(scim, "tess")  # email tess@example.org, as the provider knows her
    _group(scim, "Engineering", [uid])
    browser = type(client)()

    assert sign_in(browser, provider, idp_user("tess"))["Location"] == "/"
    linked = IdpIdentity.objects.get(user__username="tess")
    assert linked.subject and User.objects.filter(email="tess@example.org").count() == 1
    assert browser.get("/").status_code == 200

    scim(
        "PATCH",
        f"/Users/{uid}",
        {"schemas": [PATCH], "Operations": [{"op": "replace", "path": "active", "value": False}]},
    )

    response = browser.get("/")
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")
