"""Who gets the daily review digest, and what it lists."""

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.db.models import Q

from memory.access import APPROVE, visible_memory_ids
from memory.review_queue import waiting_items


def digest_recipients():
    """Active approvers (site-wide or of a team) with an email address who have not opted out, in name order."""
    app_label, codename = "memory", "approve_memory"
    perm = Permission.objects.filter(content_type__app_label=app_label, codename=codename)
    return (
        get_user_model()
        .objects.filter(is_active=True)
        .exclude(email="")
        .filter(
            Q(is_superuser=True)
            | Q(groups__permissions__in=perm)
            | Q(user_permissions__in=perm)
            | Q(memberships__role="approver")
        )
        .exclude(digest_preference__daily_digest=False)
        .distinct()
        .order_by("username")
    )


def digest_items_for(user):
    """What waits for this approver in the memories they govern (their teams', or every one for a
    site-wide approver), oldest first."""
    return waiting_items(visible_memory_ids(user, APPROVE))


def digest_enabled(user):
    pref = getattr(user, "digest_preference", None) if user.pk else None
    return pref.daily_digest if pref is not None else True
