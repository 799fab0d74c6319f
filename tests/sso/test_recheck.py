"""A provider session is checked with the provider again after OIDC_RECHECK_SECONDS: new groups give new roles,
a person the provider no longer accepts goes to the login page, an unreachable provider gives a clear page."""

from django.contrib.auth.models import User

from memory.sso.recheck import CHECKED_AT
from memory.sso.services import group_mapping_set
from personas.models import Membership, Team

from .conftest import idp_group_add, idp_group_remove, idp_lock, sign_in


def _interval_passed(client):
    session = client.session
    session[CHECKED_AT] -= 3600
    session.save()


def _roles(username):
    return dict(Membership.objects.filter(user__idp_identity__subject=username).values_list("team__slug", "role"))


def test_changed_groups_give_the_new_role_on_the_next_request_after_the_interval(client, provider, idp_user, db):
    red = Team.objects.create(name="Red", slug="red")
    group_mapping_set(group="eng", team=red, role="viewer")
    group_mapping_set(group="leads", team=red, role="approver")
    person = idp_user("ivan", groups=["eng"])
    sign_in(client, provider, person)
    assert _roles("ivan") == {"red": "viewer"}

    idp_group_add(provider, person, "leads")
    assert client.get("/").status_code == 200
    assert _roles("ivan") == {"red": "viewer"}, "not before the interval"

    _interval_passed(client)
    assert client.get("/").status_code == 200
    assert _roles("ivan") == {"red": "approver"}

    idp_group_remove(provider, person, "leads")
    idp_group_remove(provider, person, "eng")
    _interval_passed(client)
    assert client.get("/").status_code == 403
    assert _roles("ivan") == {}


def test_a_person_the_provider_no_longer_accepts_goes_to_the_login_page(client, provider, idp_user, db):
    red = Team.objects.create(name="Red", slug="red")
    group_mapping_set(group="eng", team=red, role="viewer")
    person = idp_user("judy", groups=["eng"])
    sign_in(client, provider, person)
    idp_lock(provider, person)
    assert client.get("/").status_code == 200, "still inside the interval"

    _interval_passed(client)
    response = client.get("/")

    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/?sso=ended")
    assert "_auth_user_id" not in client.session
    assert "has ended" in client.get(response["Location"]).content.decode()


def test_an_unreachable_provider_at_the_recheck_gives_a_clear_page(client, provider, idp_user, settings, db):
    red = Team.objects.create(name="Red", slug="red")
    group_mapping_set(group="eng", team=red, role="viewer")
    sign_in(client, provider, idp_user("kim", groups=["eng"]))
    from django.core.cache import cache

    cache.set(
        f"sso:discovery:{settings.OIDC_ISSUER}",
        {"issuer": settings.OIDC_ISSUER, "token_endpoint": "http://127.0.0.1:9/token"},
    )
    _interval_passed(client)

    response = client.get("/")

    assert response.status_code == 503
    assert "cannot be reached" in response.content.decode()
    assert "_auth_user_id" not in client.session


def test_password_sessions_and_agent_tokens_are_not_rechecked(client, provider, db):
    user = User.objects.create_user("local", password="pw-for-tests-1", is_superuser=True)
    client.force_login(user)
    assert CHECKED_AT not in client.session
    assert client.get("/").status_code == 200


def test_local_login_off_keeps_only_the_break_glass_path(client, settings, db):
    settings.LOCAL_LOGIN = False
    User.objects.create_user("member", password="pw-for-tests-1")
    User.objects.create_superuser("root", password="pw-for-tests-1")

    page = client.get("/accounts/login/").content.decode()
    assert 'name="password"' not in page and "/accounts/login/local/" in page

    refused = client.post("/accounts/login/local/", {"username": "member", "password": "pw-for-tests-1"})
    assert refused.status_code == 200 and "_auth_user_id" not in client.session
    refused = client.post("/accounts/login/", {"username": "member", "password": "pw-for-tests-1"})
    assert "_auth_user_id" not in client.session

    allowed = client.post("/accounts/login/local/", {"username": "root", "password": "pw-for-tests-1"})
    assert allowed.status_code == 302 and client.session["_auth_user_id"]
