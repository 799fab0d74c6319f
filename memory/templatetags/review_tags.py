"""`{% load review_tags %}`: what waits for review, for the nav badge and the home page."""

from django import template
from django.conf import settings

from memory.access import VIEW, access_for, visible_memory_ids
from memory.review_queue import queue_total, request_totals

register = template.Library()


@register.simple_tag(takes_context=True)
def review_queue(context):
    """The product-wide Queue (None for users who cannot see memories); counted once per request."""
    request = context.get("request")
    user = getattr(request, "user", None) or context.get("user")
    if user is None or not user.is_authenticated or not access_for(user).anywhere(VIEW):
        return None
    return queue_total(request_totals(request))


@register.simple_tag
def waited(since, label="waiting", depth=1):
    """How long an item has waited for review ("waiting 3 days"), marked when it is past REVIEW_OVERDUE_DAYS.
    Every review list says it this way, so an overdue item looks the same wherever it waits."""
    from django.utils.html import format_html
    from django.utils.timesince import timesince

    from memory.review_queue import is_overdue

    if since is None:
        return ""
    if is_overdue(since):
        return format_html(
            '<span class="waited waited-overdue" title="Waiting longer than {} days">{} {}</span>',
            settings.REVIEW_OVERDUE_DAYS,
            label,
            timesince(since, depth=depth),
        )
    return format_html('<span class="waited">{} {}</span>', label, timesince(since, depth=depth))


@register.simple_tag(takes_context=True)
def overdue_reviews(context):
    """Items that have waited longer than REVIEW_OVERDUE_DAYS (None for users who cannot see memories)."""
    from memory.review_queue import overdue

    request = context.get("request")
    user = getattr(request, "user", None) or context.get("user")
    if user is None or not user.is_authenticated or not access_for(user).anywhere(VIEW):
        return None
    return overdue(visible_memory_ids(user))
