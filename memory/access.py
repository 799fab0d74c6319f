"""Who may see and do what: the one rule of roles, and the one place it is turned into querysets.

A team owns projects and personas. A memory belongs to the team that owns its project; a persona's
own settings (prompts, model, budgets) to the team that owns the persona. A membership gives a person
one role in one team; a site-wide role (the `viewer`, `curator`, `approver` groups) is that role in
every team, and a superuser holds every role everywhere. Unowned projects and personas are governed
by the site-wide roles only.

The roles, their order and the action each adds are defined here once (`Role`, `ROLE_ACTION`):
memberships store a `Role`, the site-wide groups hold `role_actions(role)` (memory/roles.py makes
them), and the digest finds its recipients with `holders(APPROVE)`.

Every view reads through these helpers, so an object of another team is simply not found (404: its
name does not leak), and a list, count or choice never holds it:

    from memory.access import APPROVE, VIEW, get_for_user_or_404, memory_for_user_or_404, scope, visible_memories

    memories = visible_memories(request.user)                      # a Memory queryset
    memory = memory_for_user_or_404(request.user, pk=memory_id, action=CURATE)
    runs = scope(RefinementRun.objects.all(), request.user)        # anything with a `memory` foreign key
    run = get_for_user_or_404(request.user, RefinementRun.objects.all(), pk=pk, action=APPROVE)
    persona = get_for_user_or_404(request.user, Persona.objects.all(), pk=pk, action=APPROVE, via=PERSONA)

`action` is VIEW, CURATE or APPROVE. An object the user cannot see at all answers 404; one they can
see but may not act on answers 403. Site-wide roles add no query and no filter; a team member's
memberships are read once per request (one query), so scoping adds a constant number of queries.

The product's models are looked up through the app registry, not imported: personas.models and
memory.models import the rule from here, so this module imports none of their modules.
"""

from collections.abc import Callable, Iterable
from contextlib import suppress
from typing import TYPE_CHECKING, Any, Final, TypeAlias, cast

from django.apps import apps
from django.contrib.auth.models import AnonymousUser, Permission
from django.core.exceptions import PermissionDenied
from django.db import models
from django.db.models import F, Q, QuerySet
from django.http import Http404

if TYPE_CHECKING:
    from django.contrib.admin.options import BaseModelAdmin
    from django.contrib.auth.models import User as Account
    from django.http import HttpRequest

    User: TypeAlias = Account | AnonymousUser
    _AdminBase = BaseModelAdmin[Any]
else:
    User = Any
    _AdminBase = object

__all__ = [
    "APPROVE",
    "CURATE",
    "EVERY_MEMORY",
    "MEMORY",
    "PERSONA",
    "PROJECT",
    "ROLE_ACTION",
    "VIEW",
    "MemoryIds",
    "Role",
    "TeamScopedAdmin",
    "access_for",
    "can",
    "ensure_visible",
    "get_for_user_or_404",
    "holders",
    "memory_for_user_or_404",
    "permission_codename",
    "role_actions",
    "roles_granting",
    "scope",
    "visible_memories",
    "visible_memory_ids",
    "visible_personas",
    "visible_projects",
    "visible_teams",
]


# --- the rule ------------------------------------------------------------------------------------


class Role(models.TextChoices):
    """A person's role in a team (Membership.role), or site-wide as the group of the same name."""

    # Ordered: each role can do everything the one before it can.
    VIEWER = "viewer", "Viewer"
    CURATOR = "curator", "Curator"
    APPROVER = "approver", "Approver"


# The three actions, as permissions on the memory model ("app_label.codename"; the model's Meta
# declares curate and approve, Django adds view).
VIEW = "memory.view_memory"
CURATE = "memory.curate_memory"
APPROVE = "memory.approve_memory"

# The action each role adds to those of the roles before it, in Role's order.
ROLE_ACTION: dict[str, str] = {Role.VIEWER: VIEW, Role.CURATOR: CURATE, Role.APPROVER: APPROVE}
RANK: dict[str, int] = {role: rank for rank, role in enumerate(Role, start=1)}
ACTION_RANK: dict[str, int] = {ROLE_ACTION[role]: rank for role, rank in RANK.items()}


def role_actions(role: str) -> list[str]:
    """The actions a role grants: its own and those of every role before it."""
    return [action for action, rank in ACTION_RANK.items() if rank <= RANK[role]]


def roles_granting(action: str) -> list[str]:
    """The roles that grant `action` (APPROVE: only approver; VIEW: all three)."""
    return [role for role, rank in RANK.items() if rank >= ACTION_RANK[action]]


def permission_codename(action: str) -> str:
    """The permission's codename without its app label ("approve_memory")."""
    return action.partition(".")[2]


def holders(action: str) -> Q:
    """A Q on users holding `action` somewhere: a superuser, the permission site-wide (a group's or
    their own), or a team role that grants it. Whether they are active is the caller's filter."""
    app_label, _, codename = action.partition(".")
    permission = Permission.objects.filter(content_type__app_label=app_label, codename=codename)
    return (
        Q(is_superuser=True)
        | Q(groups__permissions__in=permission)
        | Q(user_permissions__in=permission)
        | Q(memberships__role__in=roles_granting(action))
    )


# An argument that limits a read to some memories: ids (a list or a subquery of `pk`), or
# EVERY_MEMORY for a caller that may read them all (a site-wide role, a management command).
MemoryIds: TypeAlias = Iterable[int] | QuerySet[Any, Any] | None
EVERY_MEMORY: Final = None


# --- reading it for one user ---------------------------------------------------------------------

# The path from a model to the team that governs it. Most rows hang off a memory.
MEMORY = "memory__project__team"
PERSONA = "team"  # a persona's own settings
PROJECT = "team"


class Access:
    """One user's roles: site-wide (from groups) and per team (memberships, read on first need)."""

    def __init__(self, user: "User | None") -> None:
        self.user = user
        self._teams: dict[int, int] | None = None

    def _signed_in(self) -> "Account | None":
        """The user, when signed in and active (an anonymous one holds no role)."""
        user = self.user
        if user is None or isinstance(user, AnonymousUser) or not (user.is_authenticated and user.is_active):
            return None
        return user

    def everywhere(self, action: str) -> bool:
        user = self._signed_in()
        return user is not None and user.has_perm(action)

    @property
    def team_roles(self) -> dict[int, int]:
        """{team_id: rank} of the user's memberships (one query, once)."""
        if self._teams is None:
            user = self._signed_in()
            memberships = apps.get_model("personas", "Membership").objects.filter(user=user)
            self._teams = (
                {team_id: RANK[role] for team_id, role in memberships.values_list("team_id", "role")} if user else {}
            )
        return self._teams

    def team_ids(self, action: str) -> list[int]:
        need = ACTION_RANK[action]
        return sorted(team_id for team_id, rank in self.team_roles.items() if rank >= need)

    def anywhere(self, action: str) -> bool:
        """May the user do `action` in at least one place? (Whether a page opens at all.)"""
        return self.everywhere(action) or bool(self.team_ids(action))

    def in_team(self, action: str, team_id: int | None) -> bool:
        return self.everywhere(action) or (team_id is not None and team_id in self.team_ids(action))


def access_for(user: "User | None") -> Access:
    """The user's Access, kept on the user object so one request reads memberships once."""
    access = getattr(user, "_nw_access", None)
    if access is None:
        access = Access(user)
        # AnonymousUser instances are shared: nothing to cache on them.
        with suppress(AttributeError):
            user._nw_access = access  # type: ignore[union-attr]
    return access


Via: TypeAlias = str | Callable[[list[int]], Q]


def scope(queryset: QuerySet[Any, Any], user: "User", action: str = VIEW, *, via: Via = MEMORY) -> QuerySet[Any, Any]:
    """The rows of `queryset` the user may do `action` on. `via` is the path to the governing team."""
    access = access_for(user)
    if access.everywhere(action):
        return queryset
    team_ids = access.team_ids(action)
    if not team_ids:
        return queryset.none()
    if callable(via):
        return queryset.filter(via(team_ids))
    return queryset.filter(**{f"{via}__in": team_ids})


def persona_call_teams(team_ids: list[int]) -> Q:
    """Personas a call list may be filtered by: the user's teams' own, and those remembering in their projects."""
    memories = apps.get_model("memory", "Memory").objects.filter(project__team__in=team_ids)
    return Q(team__in=team_ids) | Q(pk__in=memories.values("persona_id"))


def llm_call_teams(team_ids: list[int]) -> Q:
    """An LLM call belongs to its memory's team; one made outside any memory, to its persona's team."""
    return Q(memory__project__team__in=team_ids) | Q(memory__isnull=True, persona__team__in=team_ids)


def visible_memories(user: "User", action: str = VIEW) -> QuerySet[Any, Any]:
    return scope(apps.get_model("memory", "Memory").objects.all(), user, action, via="project__team")


def visible_memory_ids(user: "User", action: str = VIEW) -> MemoryIds:
    """EVERY_MEMORY when the user may act on every memory (no filter needed), else a subquery of the
    ids of those they may: what a `memory_ids` argument (review counts, the digest) takes."""
    if access_for(user).everywhere(action):
        return EVERY_MEMORY
    return visible_memories(user, action).values("pk")


def visible_personas(user: "User", action: str = VIEW) -> QuerySet[Any, Any]:
    """Personas whose settings the user may read (`action=APPROVE`: edit)."""
    return scope(apps.get_model("personas", "Persona").objects.all(), user, action, via=PERSONA)


def visible_projects(user: "User", action: str = VIEW) -> QuerySet[Any, Any]:
    return scope(apps.get_model("personas", "Project").objects.all(), user, action, via=PROJECT)


def visible_teams(user: "User", action: str = VIEW) -> QuerySet[Any, Any]:
    """Teams the user holds `action` in (every team for a site-wide role)."""
    teams = apps.get_model("personas", "Team").objects.all()
    access = access_for(user)
    if access.everywhere(action):
        return teams
    return teams.filter(pk__in=access.team_ids(action))


def get_for_user_or_404(
    user: "User", queryset: QuerySet[Any, Any], *, action: str = VIEW, via: str = MEMORY, **lookup: Any
) -> Any:
    """The one object at `lookup` if the user may see it (else 404) and do `action` on it (else 403)."""
    access = access_for(user)
    if access.everywhere(action):
        try:
            return queryset.get(**lookup)
        except queryset.model.DoesNotExist:
            raise Http404(f"No such {queryset.model._meta.verbose_name}") from None
    obj = scope(queryset, user, VIEW, via=via).annotate(_nw_team_id=F(via)).filter(**lookup).first()
    if obj is None:
        raise Http404(f"No such {queryset.model._meta.verbose_name}")
    if not access.in_team(action, obj._nw_team_id):
        raise PermissionDenied
    return obj


def ensure_visible(
    user: "User", queryset: QuerySet[Any, Any], *, action: str = VIEW, via: str = MEMORY, **lookup: Any
) -> None:
    """Raise 404 / 403 as get_for_user_or_404 would, for a view that reads the object through its own
    selector. A site-wide role costs no query here (the view's own read answers 404 for a missing row)."""
    if not access_for(user).everywhere(action):
        get_for_user_or_404(user, queryset.only("pk"), action=action, via=via, **lookup)


def memory_for_user_or_404(
    user: "User", *, action: str = VIEW, queryset: QuerySet[Any, Any] | None = None, **lookup: Any
) -> Any:
    """The Memory at `lookup` (with its persona and project) if the user may do `action` on it, else 404 / 403."""
    if queryset is None:
        queryset = apps.get_model("memory", "Memory").objects.select_related("persona", "project")
    return get_for_user_or_404(user, queryset, action=action, via="project__team", **lookup)


def can(user: "User", action: str, memory: Any = None, *, team_id: int | None = None) -> bool:
    """May the user do `action` on this memory (or in this team)? Without either: anywhere at all."""
    access = access_for(user)
    if memory is None and team_id is None:
        return access.anywhere(action)
    if access.everywhere(action):
        return True
    if memory is not None:
        team_id = memory.project.team_id
    return access.in_team(action, team_id)


def persona_settings_q(user: "User", action: str = APPROVE) -> Q:
    """A Q on Persona for the personas whose settings the user may change (for form choices)."""
    access = access_for(user)
    if access.everywhere(action):
        return Q()
    return Q(team__in=access.team_ids(action))


# --- the admin ----------------------------------------------------------------------------------


def _team_of(obj: Any, via: str) -> int | None:
    """The team id of one object, following `via` ("memory__project__team") attribute by attribute."""
    *path, last = via.split("__")
    for part in path:
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj.pk if last in ("id", "pk") else getattr(obj, f"{last}_id", None)


class TeamScopedAdmin(_AdminBase):
    """A ModelAdmin mixin: someone holding the model's own Django permissions (a site administrator)
    keeps the admin as it is; a team's approver (staff) reads and changes their teams' rows only,
    and picks teams, personas and projects among their teams' own."""

    team_via = MEMORY
    team_action = APPROVE  # the role that manages these rows in a team
    team_may_add = False
    team_may_change = False

    def _site_admin(self, request: "HttpRequest", perm: str) -> bool:
        opts = self.model._meta
        return request.user.has_perm(f"{opts.app_label}.{perm}_{opts.model_name}")

    def team_of(self, obj: Any) -> int | None:
        return _team_of(obj, self.team_via)

    def _in_teams(self, request: "HttpRequest", obj: Any) -> bool:
        access = access_for(request.user)
        if obj is None:
            return access.anywhere(self.team_action)
        return access.in_team(self.team_action, self.team_of(obj))

    def get_queryset(self, request: "HttpRequest") -> QuerySet[Any, Any]:
        queryset = super().get_queryset(request)
        if self._site_admin(request, "view") or self._site_admin(request, "change"):
            return queryset
        return scope(queryset, request.user, self.team_action, via=self.team_via)

    def has_module_permission(self, request: "HttpRequest") -> bool:
        return super().has_module_permission(request) or access_for(request.user).anywhere(self.team_action)

    def has_view_permission(self, request: "HttpRequest", obj: Any = None) -> bool:
        return super().has_view_permission(request, obj) or self._in_teams(request, obj)

    def has_change_permission(self, request: "HttpRequest", obj: Any = None) -> bool:
        if super().has_change_permission(request, obj):
            return True
        return self.team_may_change and self._in_teams(request, obj)

    def has_add_permission(self, request: "HttpRequest", *args: Any) -> bool:
        if super().has_add_permission(request, *args):
            return True
        return self.team_may_add and access_for(request.user).anywhere(self.team_action)

    def formfield_for_foreignkey(self, db_field: Any, request: "HttpRequest", **kwargs: Any) -> Any:
        field = super().formfield_for_foreignkey(db_field, request, **kwargs)
        if field is None or self._site_admin(request, "change"):
            return field
        target = db_field.related_model._meta.label
        choices = cast(QuerySet[Any, Any], field.queryset)  # a foreign key's choices are a queryset
        if target == "personas.Team":
            field.queryset = scope(choices, request.user, self.team_action, via="id")
            field.required = True  # a row a team's approver made must stay in one of their teams
        elif target == "personas.Persona":
            field.queryset = scope(choices, request.user, self.team_action, via=PERSONA)
        elif target == "personas.Project":
            field.queryset = scope(choices, request.user, self.team_action, via=PROJECT)
        return field
