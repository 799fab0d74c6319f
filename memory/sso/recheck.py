"""Access ends when it should: a session begun through the provider is checked with it again at most every
OIDC_RECHECK_SECONDS, by the refresh token. The provider refusing it ends the session; new groups give new
roles at once. Sessions begun with a password, and agent and MCP tokens, are never checked here.
"""

import logging
import time

import requests
from django.conf import settings
from django.contrib.auth import logout
from django.core.cache import cache
from django.http import HttpResponseRedirect
from django.shortcuts import resolve_url
from django.utils.http import urlencode

from memory.sso.models import IdpIdentity
from memory.sso.oidc import OidcBackend, ProviderUnavailable, SignInRefused, discovery, groups_of
from memory.sso.pages import provider_unavailable
from memory.sso.services import memberships_sync
from personas.models import MembershipSource

log = logging.getLogger(__name__)
CHECKED_AT = "sso_checked_at"
REFRESH_TOKEN = "sso_refresh_token"
OK, ENDED, UNAVAILABLE = "ok", "ended", "unavailable"


def session_started(request, refresh_token: str | None) -> None:
    request.session[CHECKED_AT] = time.time()
    request.session[REFRESH_TOKEN] = refresh_token or ""


def session_recheck(request) -> str:
    """OK (checked or not due), ENDED (the provider no longer accepts the person) or UNAVAILABLE."""
    session = request.session
    checked = session.get(CHECKED_AT)
    if checked is None or time.time() - checked < settings.OIDC_RECHECK_SECONDS:
        return OK
    lock = f"sso:recheck:{session.session_key}"
    if not cache.add(lock, 1, timeout=30):
        return OK  # another request of this session is checking right now
    try:
        return _recheck(request)
    except SignInRefused as exc:
        log.warning("The identity provider's new ID token for %s was refused: %s", request.user, exc)
        return ENDED
    except (requests.RequestException, ValueError, KeyError, ProviderUnavailable) as exc:
        log.warning("The identity provider could not re-check %s: %s", request.user, exc)
        return UNAVAILABLE
    finally:
        cache.delete(lock)


def _recheck(request) -> str:
    session = request.session
    refresh_token = session.get(REFRESH_TOKEN)
    identity = IdpIdentity.objects.filter(user=request.user).first()
    if not refresh_token or identity is None or not identity.subject:
        return ENDED
    doc = discovery()
    response = requests.post(
        doc["token_endpoint"],
        data={
            "grant_type": "refresh_token",
            "refresh_token": refresh_token,
            "client_id": settings.OIDC_CLIENT_ID,
            "client_secret": settings.OIDC_CLIENT_SECRET,
        },
        timeout=settings.OIDC_TIMEOUT,
    )
    if response.status_code in (400, 401, 403):
        log.info("The identity provider no longer accepts %s: %s", request.user, response.text[:200])
        return ENDED
    response.raise_for_status()
    tokens = response.json()
    userinfo = requests.get(
        doc["userinfo_endpoint"],
        headers={"Authorization": f"Bearer {tokens['access_token']}"},
        timeout=settings.OIDC_TIMEOUT,
    )
    if userinfo.status_code in (401, 403):
        return ENDED
    userinfo.raise_for_status()
    claims = {**_id_token_claims(request, tokens.get("id_token")), **userinfo.json()}
    if claims.get("sub") != identity.subject:
        return ENDED
    memberships_sync(user=request.user, groups=groups_of(claims), source=MembershipSource.OIDC)
    session[REFRESH_TOKEN] = tokens.get("refresh_token") or refresh_token
    session[CHECKED_AT] = time.time()
    return OK


def _id_token_claims(request, id_token: str | None) -> dict:
    """The claims of the ID token a refresh returned (verified as at sign-in, but for its nonce): some providers
    (Entra ID) send the groups only there, not from the userinfo endpoint."""
    if not id_token:
        return {}
    backend = OidcBackend()
    backend.request = request
    return backend._verify_jws(id_token, backend.retrieve_matching_jwk(id_token))


class OidcRecheckMiddleware:
    """After the interval, the next request of a provider session asks the provider again; the answer
    decides that very request (new roles, the login page, or the provider-unavailable page)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        session = getattr(request, "session", None)
        if session is not None and CHECKED_AT in session and request.user.is_authenticated:
            outcome = session_recheck(request)
            if outcome == ENDED:
                logout(request)
                login = resolve_url(settings.LOGIN_URL)
                return HttpResponseRedirect(f"{login}?{urlencode({'sso': 'ended', 'next': request.get_full_path()})}")
            if outcome == UNAVAILABLE:
                logout(request)
                return provider_unavailable(request).render()
        return self.get_response(request)
