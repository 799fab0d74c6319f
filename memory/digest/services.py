"""Writes of the review digest: sending it, and a person's choice to get it or not."""

import logging
from datetime import timedelta

from django.conf import settings
from django.core.mail import EmailMultiAlternatives, get_connection
from django.db import transaction
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone
from django.utils.timesince import timesince

from memory.conflicts.expiry_selectors import EXPIRING_SOON_DAYS
from memory.digest.models import DigestPreference
from memory.digest.selectors import digest_expiring_for, digest_items_for, digest_recipients
from memory.review_queue import is_overdue
from memory.webhooks.selectors import paused_endpoints_for

log = logging.getLogger(__name__)

# The beat entry and the command may both run on one day; an approver gets at most one digest in
# this window unless it is forced.
RESEND_AFTER = timedelta(hours=20)


@transaction.atomic
def digest_preference_set(*, user, daily_digest):
    pref, _ = DigestPreference.objects.update_or_create(user=user, defaults={"daily_digest": bool(daily_digest)})
    return pref


def digest_message(*, user, items, now, paused=(), expiring=()):
    """The digest email of one approver (None when nothing waits for them, no webhook of theirs is
    paused and none of their lessons is about to expire)."""
    if not items and not paused and not expiring:
        return None
    today = timezone.localdate(now)
    rows = [
        {
            "item": item,
            "url": settings.SITE_URL + item.url,
            "waited": timesince(item.since, now, depth=1).replace("\xa0", " "),
            "overdue": is_overdue(item.since, now=now),
        }
        for item in items
    ]
    overdue = sum(1 for row in rows if row["overdue"])
    context = {
        "user": user,
        "rows": rows,
        "count": len(rows),
        "oldest": rows[0]["waited"] if rows else "",
        "paused": [
            {"endpoint": e, "url": settings.SITE_URL + reverse("admin:memory_webhookendpoint_change", args=[e.pk])}
            for e in paused
        ],
        "expiring": [
            {
                "lesson": lesson,
                "memory": f"{lesson.memory.persona.name} × {lesson.memory.project.name}",
                "when": "today" if lesson.expires_on <= today else f"on {lesson.expires_on.isoformat()}",
                "url": settings.SITE_URL + reverse("lesson_history", args=[lesson.pk]),
            }
            for lesson in expiring
        ],
        "expiring_days": EXPIRING_SOON_DAYS,
        "overdue": overdue,
        "overdue_days": settings.REVIEW_OVERDUE_DAYS,
        "account_url": settings.SITE_URL + reverse("account"),
    }
    if rows:
        subject = (
            f"Night Watch Memory: {len(rows)} item{'s' if len(rows) != 1 else ''} "
            f"wait{'' if len(rows) != 1 else 's'} for your review (oldest: {rows[0]['waited']})"
        )
    elif paused:
        subject = f"Night Watch Memory: {len(paused)} webhook endpoint{'s' if len(paused) != 1 else ''} paused"
    else:
        n = len(expiring)
        subject = f"Night Watch Memory: {n} lesson{'s' if n != 1 else ''} expire{'' if n != 1 else 's'} within {EXPIRING_SOON_DAYS} days"
    message = EmailMultiAlternatives(
        subject, render_to_string("memory/digest/email.txt", context), settings.DEFAULT_FROM_EMAIL, [user.email]
    )
    message.attach_alternative(render_to_string("memory/digest/email.html", context), "text/html")
    return message


def digest_send_all(*, force=False, now=None):
    """Email each approver what waits for their review, oldest first. No email to someone with
    nothing waiting, who opted out, or who already got one in the last 20 hours (unless `force`).
    Returns how many emails were sent."""
    now = now or timezone.now()
    messages, sent_to = [], []
    recent = {p.user_id: p.last_sent_at for p in DigestPreference.objects.filter(last_sent_at__isnull=False)}
    for user in digest_recipients():
        if not force and recent.get(user.pk) and now - recent[user.pk] < RESEND_AFTER:
            continue
        message = digest_message(
            user=user,
            items=digest_items_for(user),
            now=now,
            paused=paused_endpoints_for(user),
            expiring=digest_expiring_for(user, today=timezone.localdate(now)),
        )
        if message is not None:
            messages.append(message)
            sent_to.append(user)
    if not messages:
        return 0
    with get_connection() as connection:
        sent = connection.send_messages(messages) or 0
    for user in sent_to:
        DigestPreference.objects.update_or_create(user=user, defaults={"last_sent_at": now})
    log.info("review digest sent to %d approver(s)", sent)
    return sent
