"""`{% load promotions_tags %}`: the pending-promotions badge and review helpers."""

from django import template
from django.utils.html import format_html

from memory.access import VIEW, access_for

register = template.Library()


@register.simple_tag(takes_context=True)
def pending_promotions(context):
    """How many candidates wait for a decision (None for users who cannot see them), from the review
    queue's counts: the Promotions badge, the Memories badge and the home page cannot disagree."""
    request = context.get("request")
    user = getattr(request, "user", None) or context.get("user")
    if user is None or not user.is_authenticated or not access_for(user).anywhere(VIEW):
        return None
    from memory.review_queue import request_totals

    return request_totals(request).get("promotions", 0)


@register.simple_tag
def ref_link(project, ref_text):
    """A code reference as a permalink into the project's repository when it has one."""
    from memory.refs import parse_ref

    try:
        ref = parse_ref(ref_text)
    except Exception:
        return ref_text
    url = project.permalink(ref.path, ref.start_line, ref.end_line) if project else None
    if not url:
        return format_html('<code class="ref">{}</code>', ref_text)
    return format_html('<a class="ref" href="{}" rel="noopener noreferrer" target="_blank">{}</a>', url, ref_text)
