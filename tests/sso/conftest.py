"""A real OpenID Connect provider for the sign-in tests: Canaille, run in a thread by pytest-iam."""

import uuid
from urllib.parse import urlsplit

import pytest
import requests

PASSWORD = "correct horse battery staple"
SCOPES = ["openid", "email", "profile", "groups"]


@pytest.fixture
def provider(iam_server, settings, request):
    """The provider, with this site registered as a confidential client and the settings pointing at it."""
    client_id = f"nightwatch-{uuid.uuid4().hex[:8]}"
    redirect_uris = ["http://testserver/accounts/sso/callback/"]
    if "live_server" in request.fixturenames:
        redirect_uris.append(request.getfixturevalue("live_server").url + "/accounts/sso/callback/")
    client = iam_server.models.Client(
        client_id=client_id,
        client_secret="s3cret-" + client_id,
        client_name="Night Watch Memory",
        redirect_uris=redirect_uris,
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        token_endpoint_auth_method="client_secret_post",
        scope=SCOPES,
    )
    iam_server.backend.save(client)
    client.audience = [client]
    iam_server.backend.save(client)
    settings.OIDC_ISSUER = iam_server.url.rstrip("/")
    settings.OIDC_CLIENT_ID = client.client_id
    settings.OIDC_CLIENT_SECRET = client.client_secret
    settings.OIDC_SCOPES = " ".join(SCOPES)
    settings.OIDC_PROVIDER_NAME = "Canaille"
    iam_server.client = client
    yield iam_server
    iam_server.logout()


@pytest.fixture
def idp_user(provider):
    """make(name, groups=[...]) creates a person at the provider, in those groups (made as needed)."""

    def make(name, groups=(), email=None):
        user = provider.random_user(
            user_name=name,
            password=PASSWORD,
            emails=[email or f"{name}@example.org"],
            given_name=name.capitalize(),
            family_name="Tester",
            lock_date=None,
        )
        for group in groups:
            idp_group_add(provider, user, group)
        provider.consent(user, provider.client)
        return user

    return make


def idp_group_add(provider, user, name):
    with provider.app.app_context():
        found = provider.backend.query(provider.models.Group, display_name=name)
        if found:
            group = found[0]
            group.members = [*group.members, user]
        else:
            group = provider.models.Group(display_name=name, members=[user])
        provider.backend.save(group)


def idp_group_remove(provider, user, name):
    with provider.app.app_context():
        group = provider.backend.query(provider.models.Group, display_name=name)[0]
        group.members = [m for m in group.members if m.id != user.id]
        provider.backend.save(group)


def idp_lock(provider, user):
    import datetime

    with provider.app.app_context():
        user.lock_date = datetime.datetime.now(datetime.UTC) - datetime.timedelta(seconds=5)
        provider.backend.save(user)


def sign_in(client, provider, user, *, follow=True):
    """The code flow with the provider's session already open for `user`: returns the callback's response."""
    start = client.get("/accounts/sso/start/")
    assert start.status_code == 302, start
    provider.login(user)
    try:
        answer = requests.get(start["Location"], allow_redirects=False, timeout=10)
    finally:
        provider.logout()
    assert answer.status_code == 302, answer.text[:500]
    callback = urlsplit(answer.headers["Location"])
    assert callback.path == "/accounts/sso/callback/", answer.headers["Location"]
    return client.get(f"{callback.path}?{callback.query}")
