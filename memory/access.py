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

from memory.roles import APPROVE, CURATE, VIEW

__all__ = ["VIEW", "CURATE", "APPROVE", "MEMORY", "PERSONA", "PROJECT", "access_for", "scope",
           "visible_memories", "memory_for_user_or_404", "get_for_user_or_404", "can", "visible_personas",
           "visible_projects", "visible_memory_ids", "ensure_visible"]

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

                self._teams = {team_id: RANK[role] for team_id, role in
                               Membership.objects.filter(user=self.user).values_list("team_id", "role")}
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
