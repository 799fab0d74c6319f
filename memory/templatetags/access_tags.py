"""`{% load access_tags %}`: what the signed-in person may do to the memory on the page.

    {% can "curate" memory as may_curate %}{% if may_curate %}…{% endif %}

The same rule as the views (memory.access), so a button shows exactly when its POST would be allowed.
"""

from django import template

from memory.access import APPROVE, CURATE, VIEW
from memory.access import can as _can

register = template.Library()

ACTIONS = {"view": VIEW, "curate": CURATE, "approve": APPROVE}


@register.simple_tag(takes_context=True)
def can(context, action, memory=None):
    request = context.get("request")
    user = getattr(request, "user", None) or context.get("user")
    if user is None or not user.is_authenticated:
        return False
    return _can(user, ACTIONS[action], memory)
