"""What a request may see and do: the one place teams and roles are turned into querysets.

A team owns projects and personas. A memory belongs to the team that owns its project; a persona's
own settings (prompts, model, budgets) to the team that owns the persona. A membership gives a person
one role in one team; a site-wide role (the `viewer`, `curator`, `approver` groups) is that role in
every team, and a superuser holds every role everywhere. Unowned projects and personas are governed
by the site-wide roles only.

Every view reads through these helpers, so an object of another team is simply not found (404: its
name does not leak), and a list, count or choice never holds it:

    from memory.access import APPROVE, VIEW, get_for_user_or_404, memory_for_user_or_404, scope, visible_memories

    memories = visible_memories(request.user)                      # a Memory queryset
    memory = memory_for_user_or_404(request.user, pk=memory_id, action=CURATE)
    @with_memory(APPROVE, kwarg="memory_pk")                       # the same, as a view decorator
    runs = scope(RefinementRun.objects.all(), request.user)        # anything with a `memory` foreign key
    run = get_for_user_or_404(request.user, RefinementRun.objects.all(), pk=pk, action=APPROVE)
    persona = get_for_user_or_404(request.user, Persona.objects.all(), pk=pk, action=APPROVE, via=PERSONA)

`action` is VIEW, CURATE or APPROVE. An object the user cannot see at all answers 404; one they can
see but may not act on answers 403. Site-wide roles add no query and no filter; a team member's
memberships are read once per request (one query), so scoping adds a constant number of queries.
"""

from django.core.exceptions import PermissionDenied
from django.db.models import F, Q
from django.http import Http404

# The three actions, as the permissions a site-wide role's group holds (memory/roles.py creates them).
VIEW = "memory.view_memory"
CURATE = "memory.curate_memory"
APPROVE = "memory.approve_memory"

__all__ = [
    "APPROVE",
    "CURATE",
    "MEMORY",
    "PERSONA",
    "PROJECT",
    "VIEW",
    "TeamScopedAdmin",
    "access_for",
    "can",
    "ensure_visible",
    "get_for_user_or_404",
    "memory_for_user_or_404",
    "scope",
    "visible_memories",
    "visible_memory_ids",
    "visible_personas",
    "visible_projects",
    "visible_teams",
    "with_memory",
]

# The path from a model to the team that governs it. Most rows hang off a memory.
MEMORY = "memory__project__team"
PERSONA = "team"  # a persona's own settings
PROJECT = "team"

RANK = {"viewer": 1, "curator": 2, "approver": 3}
ACTION_RANK = {VIEW: 1, CURATE: 2, APPROVE: 3}


class Access:
    """One user's roles: site-wide (from groups) and per team (memberships, read on first need)."""

    def __init__(self, user):
        self.user = user
        self._teams = None

    def everywhere(self, action):
        user = self.user
        return bool(user and user.is_authenticated and user.is_active and user.has_perm(action))

    @property
    def team_roles(self):
        """{team_id: rank} of the user's memberships (one query, once)."""
        if self._teams is None:
            if not (self.user and self.user.is_authenticated and self.user.is_active):
                self._teams = {}
            else:
                from personas.models import Membership

                self._teams = {
                    team_id: RANK[role]
                    for team_id, role in Membership.objects.filter(user=self.user).values_list("team_id", "role")
                }
        return self._teams

    def team_ids(self, action):
        need = ACTION_RANK[action]
        return sorted(team_id for team_id, rank in self.team_roles.items() if rank >= need)

    def anywhere(self, action):
        """May the user do `action` in at least one place? (Whether a page opens at all.)"""
        return self.everywhere(action) or bool(self.team_ids(action))

    def in_team(self, action, team_id):
        return self.everywhere(action) or (team_id is not None and team_id in self.team_ids(action))


def access_for(user):
    """The user's Access, kept on the user object so one request reads memberships once."""
    access = getattr(user, "_nw_access", None)
    if access is None:
        access = Access(user)
        try:
            user._nw_access = access
        except AttributeError:  # AnonymousUser instances are shared; nothing to cache for them
            pass
    return access


def scope(queryset, user, action=VIEW, *, via=MEMORY):
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


def persona_call_teams(team_ids):
    """Personas a call list may be filtered by: the user's teams' own, and those remembering in their projects."""
    from memory.models import Memory

    return Q(team__in=team_ids) | Q(pk__in=Memory.objects.filter(project__team__in=team_ids).values("persona_id"))


def llm_call_teams(team_ids):
    """An LLM call belongs to its memory's team; one made outside any memory, to its persona's team."""
    return Q(memory__project__team__in=team_ids) | Q(memory__isnull=True, persona__team__in=team_ids)


def visible_memories(user, action=VIEW):
    from memory.models import Memory

    return scope(Memory.objects.all(), user, action, via="project__team")


def visible_memory_ids(user, action=VIEW):
    """None when the user sees every memory (no filter needed), else a subquery of memory ids:
    what `memory_ids` arguments (review counts, detection status) accept."""
    if access_for(user).everywhere(action):
        return None
    return visible_memories(user, action).values("pk")


def visible_personas(user, action=VIEW):
    """Personas whose settings the user may read (`action=APPROVE`: edit)."""
    from personas.models import Persona

    return scope(Persona.objects.all(), user, action, via=PERSONA)


def visible_projects(user, action=VIEW):
    from personas.models import Project

    return scope(Project.objects.all(), user, action, via=PROJECT)


def visible_teams(user, action=VIEW):
    """Teams the user holds `action` in (every team for a site-wide role)."""
    from personas.models import Team

    access = access_for(user)
    if access.everywhere(action):
        return Team.objects.all()
    return Team.objects.filter(pk__in=access.team_ids(action))


def get_for_user_or_404(user, queryset, *, action=VIEW, via=MEMORY, **lookup):
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


def ensure_visible(user, queryset, *, action=VIEW, via=MEMORY, **lookup):
    """Raise 404 / 403 as get_for_user_or_404 would, for a view that reads the object through its own
    selector. A site-wide role costs no query here (the view's own read answers 404 for a missing row)."""
    if not access_for(user).everywhere(action):
        get_for_user_or_404(user, queryset.only("pk"), action=action, via=via, **lookup)


def memory_for_user_or_404(user, *, action=VIEW, queryset=None, **lookup):
    from memory.models import Memory

    queryset = Memory.objects.select_related("persona", "project") if queryset is None else queryset
    return get_for_user_or_404(user, queryset, action=action, via="project__team", **lookup)


def with_memory(action=VIEW, *, kwarg="memory_id"):
    """A view decorator: the URL's memory id (`kwarg`) becomes `memory`, a Memory the user may do
    `action` on (else 404 / 403), with its persona and project loaded.

        @require_POST
        @curator_required
        @with_memory(CURATE, kwarg="memory_pk")
        def folder_sync_resolve(request, memory): ...
    """
    from functools import wraps

    def decorator(view):
        @wraps(view)
        def wrapped(request, *args, **kwargs):
            memory = memory_for_user_or_404(request.user, pk=kwargs.pop(kwarg), action=action)
            return view(request, *args, memory=memory, **kwargs)

        return wrapped

    return decorator


def can(user, action, memory=None, *, team_id=None):
    """May the user do `action` on this memory (or in this team)? Without either: anywhere at all."""
    access = access_for(user)
    if memory is None and team_id is None:
        return access.anywhere(action)
    if access.everywhere(action):
        return True
    if memory is not None:
        team_id = memory.project.team_id
    return access.in_team(action, team_id)


def persona_settings_q(user, action=APPROVE):
    """A Q on Persona for the personas whose settings the user may change (for form choices)."""
    access = access_for(user)
    if access.everywhere(action):
        return Q()
    return Q(team__in=access.team_ids(action))


# --- the admin ----------------------------------------------------------------------------------


def _team_of(obj, via):
    """The team id of one object, following `via` ("memory__project__team") attribute by attribute."""
    *path, last = via.split("__")
    for part in path:
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj.pk if last in ("id", "pk") else getattr(obj, f"{last}_id", None)


class TeamScopedAdmin:
    """A ModelAdmin mixin: someone holding the model's own Django permissions (a site administrator)
    keeps the admin as it is; a team's approver (staff) reads and changes their teams' rows only,
    and picks teams, personas and projects among their teams' own."""

    team_via = MEMORY
    team_action = APPROVE  # the role that manages these rows in a team
    team_may_add = False
    team_may_change = False

    def _site_admin(self, request, perm):
        opts = self.model._meta
        return request.user.has_perm(f"{opts.app_label}.{perm}_{opts.model_name}")

    def team_of(self, obj):
        return _team_of(obj, self.team_via)

    def _in_teams(self, request, obj):
        access = access_for(request.user)
        if obj is None:
            return access.anywhere(self.team_action)
        return access.in_team(self.team_action, self.team_of(obj))

    def get_queryset(self, request):
        queryset = super().get_queryset(request)
        if self._site_admin(request, "view") or self._site_admin(request, "change"):
            return queryset
        return scope(queryset, request.user, self.team_action, via=self.team_via)

    def has_module_permission(self, request):
        return super().has_module_permission(request) or access_for(request.user).anywhere(self.team_action)

    def has_view_permission(self, request, obj=None):
        return super().has_view_permission(request, obj) or self._in_teams(request, obj)

    def has_change_permission(self, request, obj=None):
        if super().has_change_permission(request, obj):
            return True
        return self.team_may_change and self._in_teams(request, obj)

    def has_add_permission(self, request, *args):
        if super().has_add_permission(request, *args):
            return True
        return self.team_may_add and access_for(request.user).anywhere(self.team_action)

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        field = super().formfield_for_foreignkey(db_field, request, **kwargs)
        if field is None or self._site_admin(request, "change"):
            return field
        target = db_field.related_model._meta.label
        if target == "personas.Team":
            field.queryset = scope(field.queryset, request.user, self.team_action, via="id")
            field.required = True  # a row a team's approver made must stay in one of their teams
        elif target == "personas.Persona":
            field.queryset = scope(field.queryset, request.user, self.team_action, via=PERSONA)
        elif target == "personas.Project":
            field.queryset = scope(field.queryset, request.user, self.team_action, via=PROJECT)
        return field
