"""Three roles: viewer reads everything, curator edits lessons, approver governs automated changes.

Roles are groups holding the permissions below; superusers hold every permission.
"""

from functools import wraps

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied

VIEW = "memory.view_memory"
CURATE = "memory.curate_memory"
APPROVE = "memory.approve_memory"

ROLE_PERMISSIONS = {
    "viewer": ["view_memory"],
    "curator": ["view_memory", "curate_memory"],
    "approver": ["view_memory", "curate_memory", "approve_memory"],
}


def permission_required(perm):
    """Anonymous users go to the login page; a logged-in user without the permission gets 403."""

    def decorator(view):
        @wraps(view)
        @login_required
        def wrapped(request, *args, **kwargs):
            if not request.user.has_perm(perm):
                raise PermissionDenied
            return view(request, *args, **kwargs)

        return wrapped

    return decorator


viewer_required = permission_required(VIEW)
curator_required = permission_required(CURATE)
approver_required = permission_required(APPROVE)


def ensure_role_groups(**kwargs):
    from django.contrib.auth.models import Group, Permission

    perms = {p.codename: p for p in Permission.objects.filter(content_type__app_label="memory", content_type__model="memory")}
    for role, codenames in ROLE_PERMISSIONS.items():
        group, _ = Group.objects.get_or_create(name=role)
        group.permissions.add(*[perms[c] for c in codenames if c in perms])
