"""Writes to personas. Memory is keyed by the persona's id, so renames and archives never touch it."""

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from memory.textcheck import name_problem
from personas.models import Persona, PersonaAlias

if TYPE_CHECKING:
    from personas.models import Membership, Project, Team, TeamChange
from personas.schema import validate_structured


def check_persona_name(name: str | None, *, exclude_pk: int | None = None) -> str:
    """The cleaned name, or a ValidationError saying why it cannot be used (names are unique ignoring case)."""
    name = (name or "").strip()
    if not name:
        raise ValidationError("A persona needs a name.")
    if problem := name_problem(name, what="persona name"):
        raise ValidationError(problem[0].upper() + problem[1:] + ".")
    clash = Persona.objects.filter(name__iexact=name)
    if exclude_pk is not None:
        clash = clash.exclude(pk=exclude_pk)
    other = clash.first()
    if other is not None:
        state = " (archived)" if other.is_archived else ""
        raise ValidationError(
            f"A persona named “{other.name}”{state} already exists; names are compared ignoring case."
        )
    aliases = PersonaAlias.objects.filter(name__iexact=name)
    if exclude_pk is not None:
        aliases = aliases.exclude(persona_id=exclude_pk)
    alias = aliases.select_related("persona").first()
    if alias is not None:
        raise ValidationError(
            f"“{alias.name}” is an old name of “{alias.persona.name}”, kept so agents still using it reach that "
            "persona; remove it from that persona's old names first."
        )
    return name


def _name_or_field_error(name: str | None, *, exclude_pk: int | None = None) -> str:
    try:
        return check_persona_name(name, exclude_pk=exclude_pk)
    except ValidationError as exc:
        raise ValidationError({"name": exc.messages}) from None


@transaction.atomic
def persona_create(
    *,
    name: str,
    role: str = "",
    soul: dict[str, Any] | None = None,
    style: dict[str, Any] | None = None,
    skill: dict[str, Any] | None = None,
    **fields: Any,
) -> Persona:
    name = _name_or_field_error(name)
    soul, style, skill = soul or {}, style or {}, skill or {}
    for section, data in (("soul", soul), ("style", style), ("skill", skill)):
        validate_structured(section, data)
    return Persona.objects.create(name=name, role=role, soul=soul, style=style, skill=skill, **fields)


@transaction.atomic
def persona_rename(*, persona: Persona, new_name: str) -> Persona:
    """Change the display name only; memories, lessons and tokens follow the id, not the name."""
    persona = Persona.objects.select_for_update().get(pk=persona.pk)
    old_name = persona.name
    persona.name = _name_or_field_error(new_name, exclude_pk=persona.pk)
    persona.save(update_fields=["name", "updated_at"])
    persona_renamed(persona=persona, old_name=old_name)
    return persona


RENAME_EFFECT = (
    "Renaming keeps the persona's memory, history and agent tokens. The old name stays as an alias, so agents "
    "still addressing /api/v1/memory/<old name>/… keep working (listed under Old names below; remove an alias "
    "to free the name). Exported memory files move to a folder of the new name, as Night Watch's own rename does."
)


def persona_renamed(*, persona: Persona, old_name: str) -> None:
    """What a rename does besides the name (RENAME_EFFECT): keep the old name as an alias, move the files."""
    if old_name == persona.name:
        return
    if old_name.casefold() != persona.name.casefold():
        PersonaAlias.objects.get_or_create(persona=persona, name=old_name)
    PersonaAlias.objects.filter(persona=persona, name__iexact=persona.name).delete()  # its own name again
    persona.folder_name = ""
    persona.save(update_fields=["folder_name"])


@transaction.atomic
def persona_archive(*, persona: Persona) -> Persona:
    """Hide a persona from active lists. Its memory stays intact and comes back on restore."""
    persona = Persona.objects.select_for_update().get(pk=persona.pk)
    if persona.archived_at is None:
        persona.archived_at = timezone.now()
        persona.archived_folder = ""  # exported as <name>-<this archive time>
        persona.save(update_fields=["archived_at", "archived_folder", "updated_at"])
    return persona


@transaction.atomic
def persona_restore(*, persona: Persona) -> Persona:
    persona = Persona.objects.select_for_update().get(pk=persona.pk)
    if persona.archived_at is not None:
        persona.archived_at = None
        persona.archived_folder = ""
        persona.save(update_fields=["archived_at", "archived_folder", "updated_at"])
    return persona


class HardDeleteRefused(Exception):
    """A permanent delete that was not confirmed exactly; the message says what is missing."""


@transaction.atomic
def persona_hard_delete(*, persona: Persona, confirm_name: str | None) -> str:
    """Remove a persona and all its memory for good.

    Only an archived persona can be removed, and only when `confirm_name` repeats its name exactly
    (case included): a deliberate, typed confirmation, never a click by accident.
    """
    persona = Persona.objects.select_for_update().get(pk=persona.pk)
    if persona.archived_at is None:
        raise HardDeleteRefused(f"Archive {persona.name!r} first; only archived personas can be deleted for good.")
    if (confirm_name or "").strip() != persona.name:
        raise HardDeleteRefused(
            f"The confirmation did not match. Type the persona's name exactly ({persona.name}) to delete it."
        )
    name = persona.name
    persona.delete()
    return name


@transaction.atomic
def personas_seed_defaults() -> tuple[list[str], list[str]]:
    """Create the default personas that are missing. Existing ones (even archived or edited) are left alone.

    Returns (created, skipped): lists of persona names.
    """
    from personas.defaults import DEFAULT_PERSONAS

    created: list[str] = []
    skipped: list[str] = []
    for spec in DEFAULT_PERSONAS:
        existing = Persona.objects.filter(name__iexact=spec["name"]).first()
        if existing is not None:
            skipped.append(existing.name)
            continue
        created.append(persona_create(**spec).name)
    return created, skipped


# --- teams ----------------------------------------------------------------------------------------


def team_change_record(*, team: "Team | None", action: str, detail: str, by: User | None = None) -> "TeamChange":
    """One line of a team's history: who changed what, when. Never edited afterwards."""
    from personas.models import TeamChange

    return TeamChange.objects.create(
        team=team,
        team_name=team.name if team else "",
        action=action,
        detail=detail[:500],
        by=by if getattr(by, "pk", None) else None,
    )


@transaction.atomic
def team_owner_moved(*, obj: "Persona | Project", old_team_id: int | None, by: User | None = None) -> None:
    """A project or persona moved between teams: the move goes into both teams' histories."""
    from personas.models import Team

    kind = str(obj._meta.verbose_name)
    old = Team.objects.filter(pk=old_team_id).first() if old_team_id else None
    new = obj.team
    if old is not None:
        team_change_record(
            team=old,
            action=f"{kind} moved out",
            detail=f"{kind.capitalize()} “{obj}” moved to {new.name if new else 'no team'}",
            by=by,
        )
    if new is not None:
        team_change_record(
            team=new,
            action=f"{kind} moved in",
            detail=f"{kind.capitalize()} “{obj}” moved in from {old.name if old else 'no team'}",
            by=by,
        )


@transaction.atomic
def team_memberships_changed(
    *,
    team: "Team",
    added: Iterable["Membership"] = (),
    changed: Iterable[tuple["Membership", str]] = (),
    removed: Iterable[tuple[User, str]] = (),
    by: User | None = None,
) -> None:
    """Members added (membership), given another role (membership, old role) or removed (user, role)."""
    for membership in added:
        team_change_record(
            team=team,
            action="member added",
            detail=f"{membership.user} added as {membership.get_role_display().lower()}",
            by=by,
        )
    for membership, old_role in changed:
        team_change_record(
            team=team, action="role changed", detail=f"{membership.user}: {old_role} → {membership.role}", by=by
        )
    for user, role in removed:
        team_change_record(team=team, action="member removed", detail=f"{user} ({role}) removed", by=by)
