"""Agent bearer tokens: created once, stored as a sha256 hash with a short prefix to recognise them."""

import hashlib
import secrets

from django.db import transaction
from django.utils import timezone

from memory.models import AgentToken

TOKEN_PREFIX = "nwm_"
PREFIX_LENGTH = 12


def token_hash(raw):
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


@transaction.atomic
def agent_token_create(*, persona, project=None, name=""):
    """Returns (token, raw). The raw value is shown once and never stored."""
    raw = TOKEN_PREFIX + secrets.token_urlsafe(32)
    token = AgentToken.objects.create(
        persona=persona, project=project, name=name[:100], prefix=raw[:PREFIX_LENGTH], token_hash=token_hash(raw)
    )
    return token, raw


def agent_token_authenticate(raw):
    """The live token for a raw bearer value, or None. One query (the persona and project come along)."""
    if not raw or not raw.startswith(TOKEN_PREFIX) or len(raw) > 200:
        return None
    return (
        AgentToken.objects.select_related("persona", "project")
        .filter(token_hash=token_hash(raw), revoked_at__isnull=True, persona__archived_at__isnull=True)
        .first()
    )


def agent_token_revoke(*, token):
    AgentToken.objects.filter(pk=token.pk, revoked_at__isnull=True).update(revoked_at=timezone.now())
