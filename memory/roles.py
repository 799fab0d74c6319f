"""Three roles: viewer reads, curator edits lessons, approver governs automated changes.

A role is held in a team (a Membership) or site-wide (a group holding the permissions below, which
means that role in every team); superusers hold every permission. Which objects a role reaches is
decided in memory/access.py; the decorators here only say whether a page opens at all.
"""

from functools import wraps

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied

from memory.access import APPROVE, CURATE, VIEW, access_for

ROLE_PERMISSIONS = {
    "viewer": ["view_memory"],
    "curator": ["view_memory", "curate_memory"],
    "approver": ["view_memory", "curate_memory", "approve_memory"],
}


def permission_required(perm):
    """Anonymous users go to the login page; a logged-in user holding the role in no team gets 403.
    The view itself scopes what it reads through memory.access."""

    def decorator(view):
        @wraps(view)
        @login_required
        def wrapped(request, *args, **kwargs):
            if not access_for(request.user).anywhere(perm):
                raise PermissionDenied
            return view(request, *args, **kwargs)

        return wrapped

    return decorator


viewer_required = permission_required(VIEW)
curator_required = permission_required(CURATE)
approver_required = permission_required(APPROVE)


def ensure_role_groups(**kwargs):
    from django.contrib.auth.models import Group, Permission

    perms = {
        p.codename: p for p in Permission.objects.filter(content_type__app_label="memory", content_type__model="memory")
    }
    for role, codenames in ROLE_PERMISSIONS.items():
        group, _ = Group.objects.get_or_create(name=role)
        group.permissions.add(*[perms[c] for c in codenames if c in perms])
