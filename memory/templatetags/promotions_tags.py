"""`{% load promotions_tags %}`: the pending-promotions badge and review helpers."""

import unicodedata

from django import template
from django.utils.html import format_html, format_html_join

from memory.roles import VIEW

register = template.Library()

_CACHE_ATTR = "_nw_pending_promotions"


@register.simple_tag(takes_context=True)
def pending_promotions(context):
    """How many candidates wait for a decision (one COUNT per request, None for users who cannot see them)."""
    request = context.get("request")
    user = getattr(request, "user", None) or context.get("user")
    if user is None or not user.is_authenticated or not user.has_perm(VIEW):
        return None
    if request is not None and hasattr(request, _CACHE_ATTR):
        return getattr(request, _CACHE_ATTR)
    from memory.promotions.selectors import pending_count

    count = pending_count()
    if request is not None:
        setattr(request, _CACHE_ATTR, count)
    return count


def _is_hidden(ch):
    # Zero-width, bidi controls and other format characters change what a reader sees without showing.
    return unicodedata.category(ch) in ("Cf", "Cc", "Co") and ch not in "\n\t"


@register.filter
def reveal_hidden(text):
    """Lesson text escaped as usual, with every invisible or bidi character shown as a visible marker."""
    text = text or ""
    if not any(_is_hidden(ch) for ch in text):
        return text  # autoescaped by the template as plain text
    pieces, run = [], []
    for ch in text:
        if _is_hidden(ch):
            if run:
                pieces.append(("text", "".join(run)))
                run = []
            pieces.append(("hidden", f"U+{ord(ch):04X}"))
        else:
            run.append(ch)
    if run:
        pieces.append(("text", "".join(run)))
    return format_html_join(
        "",
        "{}",
        (
            (format_html('<span class="invisible-char" title="hidden character {}">{}</span>', value, value)
             if kind == "hidden" else value,)
            for kind, value in pieces
        ),
    )


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
