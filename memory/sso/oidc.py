"""OIDC sign-in on mozilla-django-oidc: the provider's endpoints from its discovery document, the ID token's
issuer, audience and lifetime checked, people matched by their subject, and their groups mapped to teams.

The library does the authorization code flow with PKCE, state and nonce; this module adds what it leaves
to the project (issuer and audience checks, account linking, group mapping, the periodic re-check).
"""

import logging

import jwt
import requests
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.core.exceptions import SuspiciousOperation
from django.db import transaction
from django.utils.text import slugify
from mozilla_django_oidc.auth import OIDCAuthenticationBackend

from memory.sso.models import IdpIdentity
from memory.sso.services import memberships_sync
from personas.models import MembershipSource

log = logging.getLogger(__name__)
DISCOVERY_CACHE_SECONDS = 3600


class ProviderUnavailable(Exception):
    """The identity provider could not be reached or answered with nonsense."""


class SignInRefused(SuspiciousOperation):
    """A sign-in refused for a reason the person should read."""


def oidc_enabled() -> bool:
    return bool(settings.OIDC_ISSUER and settings.OIDC_CLIENT_ID)


def discovery() -> dict:
    """The provider's OpenID configuration (cached for an hour); ProviderUnavailable when it cannot be read."""
    issuer = settings.OIDC_ISSUER.rstrip("/")
    key = f"sso:discovery:{issuer}"
    doc = cache.get(key)
    if doc is None:
        try:
            response = requests.get(f"{issuer}/.well-known/openid-configuration", timeout=settings.OIDC_TIMEOUT)
            response.raise_for_status()
            doc = response.json()
        except (requests.RequestException, ValueError) as exc:
            raise ProviderUnavailable(str(exc)) from exc
        if doc.get("issuer", "").rstrip("/") != issuer:
            raise ProviderUnavailable(f"the provider calls itself {doc.get('issuer')!r}, not {issuer!r}")
        cache.set(key, doc, DISCOVERY_CACHE_SECONDS)
    return doc


# The library reads its settings by these names; they come from the discovery document or our own names.
_FROM_DISCOVERY = {
    "OIDC_OP_AUTHORIZATION_ENDPOINT": "authorization_endpoint",
    "OIDC_OP_TOKEN_ENDPOINT": "token_endpoint",
    "OIDC_OP_USER_ENDPOINT": "userinfo_endpoint",
    "OIDC_OP_JWKS_ENDPOINT": "jwks_uri",
}


def library_setting(attr, *default):
    if attr in _FROM_DISCOVERY:
        return discovery()[_FROM_DISCOVERY[attr]]
    own = {
        "OIDC_RP_CLIENT_ID": settings.OIDC_CLIENT_ID,
        "OIDC_RP_CLIENT_SECRET": settings.OIDC_CLIENT_SECRET,
        "OIDC_RP_SCOPES": settings.OIDC_SCOPES,
    }
    if attr in own:
        return own[attr]
    return getattr(settings, attr, *default)


ASYMMETRIC = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA")


def accepted_algorithms() -> list[str]:
    """OIDC_SIGN_ALGO when set (comma-separated), else the public-key algorithms the provider announces."""
    if settings.OIDC_SIGN_ALGO:
        return [a.strip() for a in settings.OIDC_SIGN_ALGO.split(",") if a.strip()]
    announced = discovery().get("id_token_signing_alg_values_supported") or ["RS256"]
    return [a for a in announced if a in ASYMMETRIC]


def groups_of(claims: dict) -> list[str]:
    """The groups claim as a list of names. Providers leave the claim out for a person in no group, so a missing
    claim is no group: only memberships the sign-in gave are at stake, and without the claim it gave none."""
    groups = claims.get(settings.OIDC_GROUPS_CLAIM) or []
    if isinstance(groups, str):
        groups = [groups]
    return [str(g) for g in groups]


def refusal_message(request, message):
    request.sso_error = message
    return SignInRefused(message)


class OidcBackend(OIDCAuthenticationBackend):
    """Authenticates the callback of the code flow. With OIDC not configured it never matches."""

    def __init__(self, *args, **kwargs):
        self.UserModel = get_user_model()
        self.OIDC_RP_SIGN_ALGO = "RS256"  # tells the library to verify with the provider's published keys
        self.OIDC_RP_IDP_SIGN_KEY = None

    # Endpoints are read when needed, so an unconfigured or unreachable provider costs nothing at start.
    OIDC_OP_TOKEN_ENDPOINT = property(lambda self: library_setting("OIDC_OP_TOKEN_ENDPOINT"))
    OIDC_OP_USER_ENDPOINT = property(lambda self: library_setting("OIDC_OP_USER_ENDPOINT"))
    OIDC_OP_JWKS_ENDPOINT = property(lambda self: library_setting("OIDC_OP_JWKS_ENDPOINT"))
    OIDC_RP_CLIENT_ID = property(lambda self: settings.OIDC_CLIENT_ID)
    OIDC_RP_CLIENT_SECRET = property(lambda self: settings.OIDC_CLIENT_SECRET)

    @staticmethod
    def get_settings(attr, *args):
        return library_setting(attr, *args)

    def authenticate(self, request, **kwargs):
        if not oidc_enabled() or request is None or "code" not in request.GET:
            return None
        try:
            return super().authenticate(request, **kwargs)
        except requests.HTTPError as exc:
            # The token endpoint refused the code: used before, expired, or not for this client.
            log.warning("OIDC token request refused: %s", exc)
            raise refusal_message(
                request, "The identity provider refused this sign-in (the link may have been used already). Try again."
            ) from exc
        except requests.RequestException as exc:
            raise ProviderUnavailable(str(exc)) from exc

    def get_token(self, payload):
        token_info = super().get_token(payload)
        self.request.sso_tokens = token_info  # the callback keeps the refresh token for the re-check
        return token_info

    def _verify_jws(self, payload, key):
        try:
            header = jwt.get_unverified_header(payload)
        except jwt.InvalidTokenError as exc:
            raise refusal_message(self.request, "The identity provider's answer was not a valid ID token.") from exc
        if header.get("alg") not in accepted_algorithms():
            raise refusal_message(self.request, "The ID token is signed with an algorithm this site does not accept.")
        if isinstance(key, jwt.PyJWK):
            key = key.key  # the public key itself: the JWK may not name its algorithm, the header does
        try:
            return jwt.decode(
                payload,
                key,
                algorithms=[header["alg"]],
                audience=settings.OIDC_CLIENT_ID,
                issuer=discovery()["issuer"],
                leeway=30,
                options={"require": ["exp", "iat", "iss", "aud", "sub"]},
            )
        except jwt.ExpiredSignatureError as exc:
            raise refusal_message(self.request, "The ID token has expired. Sign in again.") from exc
        except jwt.InvalidIssuerError as exc:
            raise refusal_message(
                self.request, "The ID token was issued by another provider than this site's."
            ) from exc
        except jwt.InvalidAudienceError as exc:
            raise refusal_message(self.request, "The ID token was issued for another application.") from exc
        except jwt.InvalidTokenError as exc:
            log.warning("ID token refused: %s", exc)
            raise refusal_message(self.request, "The ID token could not be verified.") from exc

    def verify_token(self, token, **kwargs):
        try:
            return super().verify_token(token, **kwargs)
        except SignInRefused:
            raise
        except SuspiciousOperation as exc:
            log.warning("ID token refused: %s", exc)
            if "Nonce" in str(exc):
                raise refusal_message(
                    self.request, "The sign-in answer does not belong to this browser session."
                ) from exc
            raise refusal_message(self.request, "The ID token could not be verified.") from exc

    def get_userinfo(self, access_token, id_token, payload):
        claims = dict(payload)
        claims.update(super().get_userinfo(access_token, id_token, payload))
        if claims.get("sub") != payload.get("sub"):
            raise refusal_message(self.request, "The provider's user information is for another person.")
        return claims

    def verify_claims(self, claims):
        return bool(claims.get("sub"))

    def filter_users_by_claims(self, claims):
        identity = IdpIdentity.objects.filter(issuer=discovery()["issuer"], subject=claims["sub"]).first()
        if identity is not None:
            return self.UserModel.objects.filter(pk=identity.user_id)
        return self.UserModel.objects.none()

    def get_or_create_user(self, access_token, id_token, payload):
        user = super().get_or_create_user(access_token, id_token, payload)
        claims = self._claims
        if user is not None:
            memberships_sync(user=user, groups=groups_of(claims), source=MembershipSource.OIDC)
        return user

    def update_user(self, user, claims):
        self._claims = claims
        if not user.is_active:
            raise refusal_message(self.request, "This account is deactivated.")
        return user

    @transaction.atomic
    def create_user(self, claims):
        """A person's first sign-in: link to the account SCIM made for them or to a local account with the same
        email (only when the provider says the email is verified), else make a new account."""
        self._claims = claims
        email = (claims.get("email") or "").strip()
        issuer = discovery()["issuer"]
        same_email = list(self.UserModel.objects.filter(email__iexact=email)) if email else []
        if len(same_email) > 1:
            raise refusal_message(self.request, "Several accounts here use this email address; ask an administrator.")
        if same_email:
            user = same_email[0]
            identity = IdpIdentity.objects.filter(user=user).first()
            provisioned = identity is not None and identity.subject is None
            if not provisioned and claims.get("email_verified") is not True:
                raise refusal_message(
                    self.request,
                    "An account with this email address already exists here, and the identity provider does not "
                    "say the address is verified. Ask an administrator to link your account.",
                )
            if identity is not None and identity.subject:
                raise refusal_message(self.request, "This email address belongs to another provider account here.")
            if not user.is_active:
                raise refusal_message(self.request, "This account is deactivated.")
            IdpIdentity.objects.update_or_create(user=user, defaults={"issuer": issuer, "subject": claims["sub"]})
            return user
        user = self.UserModel.objects.create_user(self._username(claims), email=email)
        user.first_name = (claims.get("given_name") or "")[:150]
        user.last_name = (claims.get("family_name") or "")[:150]
        user.set_unusable_password()
        user.save()
        IdpIdentity.objects.create(user=user, issuer=issuer, subject=claims["sub"])
        return user

    def _username(self, claims):
        base = (claims.get("preferred_username") or claims.get("email") or claims["sub"])[:140]
        name, n = base, 1
        while self.UserModel.objects.filter(username=name).exists():
            n += 1
            name = f"{slugify(base)[:130]}-{n}"
        return name

    def get_user(self, user_id):
        user = super().get_user(user_id)
        return user if user is not None and user.is_active else None
