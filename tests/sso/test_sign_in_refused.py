"""Bad sign-in answers are refused with a message that says why, and nothing is created."""

import time
from urllib.parse import parse_qs, urlencode, urlsplit

import jwt
import pytest
import requests
from django.contrib.auth.models import User
from django.test import RequestFactory

from memory.sso.models import IdpIdentity
from memory.sso.oidc import OidcBackend, SignInRefused

from .conftest import sign_in


def _provider_answer(client, provider, person):
    """Start a sign-in and return the provider's redirect back to the site (not yet followed)."""
    start = client.get("/accounts/sso/start/")
    provider.login(person)
    try:
        answer = requests.get(start["Location"], allow_redirects=False, timeout=10)
    finally:
        provider.logout()
    return urlsplit(answer.headers["Location"])


def _nothing_created():
    assert not User.objects.exists()
    assert not IdpIdentity.objects.exists()


def test_tampered_state_is_refused(client, provider, idp_user, db):
    answer = _provider_answer(client, provider, idp_user("dora"))
    query = parse_qs(answer.query)
    query["state"] = ["forged-state"]

    response = client.get(f"{answer.path}?{urlencode(query, doseq=True)}")

    assert response.status_code == 400
    assert "does not match a sign-in started in this browser" in response.content.decode()
    _nothing_created()


def test_nonce_that_does_not_match_the_session_is_refused(client, provider, idp_user, db):
    answer = _provider_answer(client, provider, idp_user("erin"))
    session = client.session
    for state in session["oidc_states"]:
        session["oidc_states"][state]["nonce"] = "another-nonce"
    session.save()

    response = client.get(f"{answer.path}?{answer.query}")

    assert response.status_code == 400
    assert "does not belong to this browser session" in response.content.decode()
    _nothing_created()


def test_replayed_authorization_code_is_refused(client, provider, idp_user, db, django_user_model):
    person = idp_user("fred")
    answer = _provider_answer(client, provider, person)
    assert client.get(f"{answer.path}?{answer.query}").status_code == 302
    client.logout()

    again = client.get(f"{answer.path}?{answer.query}")  # the same answer, once more
    assert again.status_code == 400
    assert "does not match a sign-in started in this browser" in again.content.decode()

    client.get("/accounts/sso/start/")  # a fresh state, but the old code
    fresh_state = next(iter(client.session["oidc_states"]))
    query = parse_qs(answer.query)
    query["state"] = [fresh_state]
    replay = client.get(f"{answer.path}?{urlencode(query, doseq=True)}")
    assert replay.status_code == 400
    assert "refused this sign-in" in replay.content.decode()
    assert "_auth_user_id" not in client.session
    assert django_user_model.objects.count() == 1


def test_email_of_a_local_account_without_a_verified_email_claim_is_refused(client, provider, idp_user, db):
    local = User.objects.create_user("gina-local", email="gina@example.org", password="pw-for-tests-1")

    response = sign_in(client, provider, idp_user("gina"))

    assert response.status_code == 400
    assert "does not say the address is verified" in response.content.decode()
    assert list(User.objects.all()) == [local]
    assert not IdpIdentity.objects.exists()
    assert "_auth_user_id" not in client.session


@pytest.fixture
def signing_key(iam_configuration):
    from joserfc.jwk import RSAKey

    data = iam_configuration["CANAILLE_OIDC"]["ACTIVE_JWKS"][0]
    key = RSAKey.import_key(data)
    return key.as_pem(private=True), data["kid"]


def _token(signing_key, **claims):
    pem, kid = signing_key
    return jwt.encode(claims, pem, algorithm="RS256", headers={"kid": kid})


def _backend():
    backend = OidcBackend()
    backend.request = RequestFactory().get("/accounts/sso/callback/")
    return backend


def test_expired_id_token_is_refused(provider, signing_key, settings, db):
    now = int(time.time())
    token = _token(
        signing_key,
        iss=settings.OIDC_ISSUER,
        aud=settings.OIDC_CLIENT_ID,
        sub="henry",
        iat=now - 7200,
        exp=now - 3600,
        nonce="n",
    )
    with pytest.raises(SignInRefused, match="has expired"):
        _backend().verify_token(token, nonce="n")


def test_id_token_of_a_foreign_issuer_is_refused(provider, signing_key, settings, db):
    now = int(time.time())
    token = _token(
        signing_key,
        iss="https://idp.elsewhere.example",
        aud=settings.OIDC_CLIENT_ID,
        sub="henry",
        iat=now,
        exp=now + 600,
        nonce="n",
    )
    with pytest.raises(SignInRefused, match="another provider"):
        _backend().verify_token(token, nonce="n")


def test_id_token_for_another_application_is_refused(provider, signing_key, settings, db):
    now = int(time.time())
    token = _token(signing_key, iss=settings.OIDC_ISSUER, aud="other-app", sub="h", iat=now, exp=now + 600, nonce="n")
    with pytest.raises(SignInRefused, match="another application"):
        _backend().verify_token(token, nonce="n")


def test_provider_down_gives_a_clear_page_not_an_error(client, settings, db):
    settings.OIDC_ISSUER = "http://127.0.0.1:9"  # nothing listens there
    settings.OIDC_CLIENT_ID = "nightwatch"
    settings.OIDC_CLIENT_SECRET = "secret"

    login = client.get("/accounts/login/")
    assert login.status_code == 200 and "Sign in with" in login.content.decode()

    response = client.get("/accounts/sso/start/")
    assert response.status_code == 503
    text = response.content.decode()
    assert "cannot be reached" in text and "/accounts/login/local/" in text
