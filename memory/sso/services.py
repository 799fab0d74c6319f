"""Writes of single sign-on: team memberships from the provider's groups, the group mapping, SCIM tokens.

A membership remembers its source. Sign-in keeps the memberships whose source is the provider's sign-in,
SCIM keeps its own, and neither touches one given by hand: a team where the person already holds a
membership of another source is left as it is. Every change goes into the team's history with its source.
"""

import secrets

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from memory.access import RANK
from memory.sso.models import IdpGroupMapping, IdpIdentity, ScimToken, scim_token_digest
from personas.models import Membership, MembershipSource, Team
from personas.services import team_change_record

SOURCE_WORDS = {
    MembershipSource.OIDC: "from the identity provider at sign-in",
    MembershipSource.SCIM: "from SCIM provisioning",
}


def roles_for_groups(groups: list[str]) -> dict[int, str]:
    """{team_id: role} the mapping gives these groups: the highest role where several map to one team."""
    wanted: dict[int, str] = {}
    for team_id, role in IdpGroupMapping.objects.filter(group__in=list(groups)).values_list("team_id", "role"):
        if team_id not in wanted or RANK[role] > RANK[wanted[team_id]]:
            wanted[team_id] = role
    return wanted


@transaction.atomic
def memberships_sync(*, user: User, groups: list[str], source: str) -> list[str]:
    """Create, change and remove the user's memberships of `source` so they match what `groups` map to.
    Returns one line per change (also written to each team's history)."""
    assert source in (MembershipSource.OIDC, MembershipSource.SCIM)
    wanted = roles_for_groups(groups)
    held = {m.team_id: m for m in Membership.objects.select_for_update().filter(user=user).select_related("team")}
    teams = Team.objects.in_bulk(list(wanted))
    why = SOURCE_WORDS[MembershipSource(source)]
    lines = []
    for team_id, role in wanted.items():
        membership = held.get(team_id)
        team = teams[team_id]
        if membership is None:
            Membership.objects.create(team=team, user=user, role=role, source=source)
            lines.append(_record(team, "member added", f"{user} added as {role} {why}"))
        elif membership.source == source and membership.role != role:
            old_role = membership.role
            membership.role = role
            membership.save(update_fields=["role"])
            lines.append(_record(team, "role changed", f"{user}: {old_role} → {role} {why}"))
    for team_id, membership in held.items():
        if team_id not in wanted and membership.source == source:
            membership.delete()
            lines.append(_record(membership.team, "member removed", f"{user} ({membership.role}) removed {why}"))
    IdpIdentity.objects.filter(user=user).update(groups=sorted(set(groups)))
    return lines


def _record(team, action, detail):
    team_change_record(team=team, action=action, detail=detail)
    return f"{team.slug}: {detail}"


@transaction.atomic
def group_mapping_set(*, group: str, team: Team, role: str) -> IdpGroupMapping:
    """Map a provider group to a role in a team (replacing the role it had there)."""
    mapping, _ = IdpGroupMapping.objects.update_or_create(group=group, team=team, defaults={"role": role})
    team_change_record(team=team, action="group mapped", detail=f"Provider group “{group}” gives {role}")
    return mapping


@transaction.atomic
def group_mapping_remove(*, group: str, team: Team | None = None) -> int:
    """Remove the group's mapping (to one team, or to all); returns how many were removed."""
    mappings = IdpGroupMapping.objects.filter(group=group).select_related("team")
    if team is not None:
        mappings = mappings.filter(team=team)
    removed = 0
    for mapping in mappings:
        team_change_record(
            team=mapping.team, action="group unmapped", detail=f"Provider group “{group}” no longer maps here"
        )
        mapping.delete()
        removed += 1
    return removed


def scim_token_create(*, name: str) -> tuple[ScimToken, str]:
    """A new SCIM bearer token; the raw value is returned once and never stored."""
    raw = "scim_" + secrets.token_urlsafe(32)
    return ScimToken.objects.create(name=name, digest=scim_token_digest(raw)), raw


def scim_token_check(raw: str) -> ScimToken | None:
    token = ScimToken.objects.filter(digest=scim_token_digest(raw), revoked_at__isnull=True).first()
    if token is not None:
        ScimToken.objects.filter(pk=token.pk).update(last_used_at=timezone.now())
    return token
