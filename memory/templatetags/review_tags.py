"""`{% load review_tags %}`: what waits for review, for the nav badge and the home page."""

from django import template

from memory.review_queue import queue_total, request_counts
from memory.access import access_for
from memory.roles import VIEW

register = template.Library()


@register.simple_tag(takes_context=True)
def review_queue(context):
    """The product-wide Queue (None for users who cannot see memories); counted once per request."""
    request = context.get("request")
    user = getattr(request, "user", None) or context.get("user")
    if user is None or not user.is_authenticated or not access_for(user).anywhere(VIEW):
        return None
    return queue_total(request_counts(request))
