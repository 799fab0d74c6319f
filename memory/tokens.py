"""Agent bearer tokens: created once, stored as a sha256 hash with a short prefix to recognise them."""

import hashlib
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cached_property

from django.db import connection, transaction
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from memory import context_cache
from memory.models import AgentToken
from personas.models import Persona, Project

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


@dataclass
class AuthenticatedToken:
    """What a request needs to know about its token; the full row loads only for writes."""

    id: int
    persona_id: int
    project_id: int | None
    prefix: str
    last_used_at: datetime | None
    persona_name: str
    project_slug: str | None
    digest: str = ""

    @cached_property
    def model(self):
        return AgentToken.objects.get(pk=self.id)

    @cached_property
    def persona(self):
        return Persona.objects.get(pk=self.persona_id)


def agent_token_authenticate(raw, *, cached=False):
    """The live token for a raw bearer value, or None.

    Every API request starts here: with `cached`, a token seen in the last
    `AGENT_TOKEN_CACHE_SECONDS` costs no query (a revocation elsewhere shows within those
    seconds); otherwise one hand-written indexed query (building it with the ORM would cost
    more than serving the whole cached context).
    """
    if not raw or not raw.startswith(TOKEN_PREFIX) or len(raw) > 200:
        return None
    digest = token_hash(raw)
    row = context_cache.token_get(digest) if cached else None
    if row is None:
        row = _token_row(digest)
        if row is None:
            return None
        context_cache.token_set(digest, row)
    return AuthenticatedToken(*row, digest)


def _token_row(digest):
    qn = connection.ops.quote_name
    sql = (
        f"SELECT t.id, t.persona_id, t.project_id, t.prefix, t.last_used_at, p.name, pr.slug "
        f"FROM {qn(AgentToken._meta.db_table)} t JOIN {qn(Persona._meta.db_table)} p ON p.id = t.persona_id "
        f"LEFT JOIN {qn(Project._meta.db_table)} pr ON pr.id = t.project_id "
        f"WHERE t.token_hash = %s AND t.revoked_at IS NULL AND p.archived_at IS NULL"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [digest])
        row = cursor.fetchone()
    if row is None:
        return None
    token_id, persona_id, project_id, prefix, last_used_at, persona_name, project_slug = row
    if isinstance(last_used_at, str):  # SQLite hands back text
        last_used_at = parse_datetime(last_used_at)
    if last_used_at is not None and timezone.is_naive(last_used_at):
        last_used_at = timezone.make_aware(last_used_at, UTC)
    return (token_id, persona_id, project_id, prefix, last_used_at, persona_name, project_slug)


def agent_token_touch(token, now):
    """Record that a token was used (callers do it at most once a minute per token)."""
    AgentToken.objects.filter(pk=token.id).update(last_used_at=now)
    token.last_used_at = now
    context_cache.token_set(
        token.digest,
        (token.id, token.persona_id, token.project_id, token.prefix, now, token.persona_name, token.project_slug),
    )


def agent_token_revoke(*, token):
    AgentToken.objects.filter(pk=token.pk, revoked_at__isnull=True).update(revoked_at=timezone.now())
    context_cache.token_changed(token.token_hash)
