"""The view decorators of the three roles, and the site-wide groups that hold them.

The roles and what each grants are defined in memory/access.py (`Role`, `role_actions`). A role is
held in a team (a Membership) or site-wide (a group named after the role, holding its permissions,
which means that role in every team); superusers hold every permission. Which objects a role
reaches is decided in memory/access.py too; the decorators here only say whether a page opens at all.
"""

from functools import wraps

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied

from memory.access import APPROVE, CURATE, VIEW, Role, access_for, permission_codename, role_actions

__all__ = ["approver_required", "curator_required", "ensure_role_groups", "permission_required", "viewer_required"]


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
    """After migrate: a group per role holding what the role grants (that role site-wide)."""
    from django.contrib.auth.models import Group, Permission

    perms = {
        p.codename: p for p in Permission.objects.filter(content_type__app_label="memory", content_type__model="memory")
    }
    for role in Role:
        group, _ = Group.objects.get_or_create(name=role)
        codenames = [permission_codename(action) for action in role_actions(role)]
        group.permissions.add(*[perms[c] for c in codenames if c in perms])
