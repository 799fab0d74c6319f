"""Who gets the daily review digest, what it lists, and what a person's account page says of it."""

from typing import Any

from django.contrib.auth import get_user_model
from django.db.models import QuerySet

from memory.access import APPROVE, access_for, holders, visible_memory_ids
from memory.review_queue import ReviewItem, waiting_items
from personas.models import Membership


def digest_recipients() -> QuerySet[Any, Any]:
    """Active approvers (site-wide or of a team) with an email address who have not opted out, in name order."""
    return (
        get_user_model()
        .objects.filter(is_active=True)
        .exclude(email="")
        .filter(holders(APPROVE))
        .exclude(digest_preference__daily_digest=False)
        .distinct()
        .order_by("username")
    )


def digest_items_for(user: Any) -> list[ReviewItem]:
    """What waits for this approver in the memories they govern (their teams', or every one for a
    site-wide approver), oldest first."""
    return waiting_items(visible_memory_ids(user, APPROVE))


def digest_expiring_for(user: Any, *, today: Any = None) -> list[Any]:
    """The live lessons of the memories this approver governs that agents stop reading within the
    next days (expires_on from today to today + EXPIRING_SOON_DAYS), soonest first."""
    from memory.conflicts.expiry_selectors import expiring_soon

    return expiring_soon(visible_memory_ids(user, APPROVE), today=today)


def digest_enabled(user: Any) -> bool:
    pref = getattr(user, "digest_preference", None) if user.pk else None
    return pref.daily_digest if pref is not None else True


def account_memberships(user: Any) -> list[Membership]:
    """The person's teams, each with their role in it, in team name order."""
    return list(Membership.objects.filter(user=user).select_related("team").order_by("team__name"))


def account_digest_scope(user: Any, memberships: list[Membership]) -> dict[str, Any]:
    """What the digest covers for this person, by the rule that picks its recipients: `approver`
    (whether one is sent at all), `everywhere` (a site-wide approver: every memory) and `teams` (the
    names of the teams they approve in)."""
    access = access_for(user)
    return {
        "approver": access.anywhere(APPROVE),
        "everywhere": access.everywhere(APPROVE),
        "teams": [m.team.name for m in memberships if m.team_id in access.team_ids(APPROVE)],
    }
