"""Template filters for showing untrusted lesson text: `{% load lesson_text %}`.

- `text|markdown`          lesson Markdown as safe inline HTML, invisible characters as chips
- `text|has_invisible`     True when text hides zero-width or bidi characters (show a warning)
- `text|invisible_chars`   the distinct hidden characters, as Segments (`.label`, `.name`)
- `text|invisible_segments` text split for `memory/partials/reveal.html` (plain text with chips)
- `text|reveal`            the same as `memory/partials/reveal.html`, as a filter (cheaper in long lists)
- `text|invisible_warning` the same as `memory/partials/invisible_warning.html`, as a filter
"""

from django import template
from django.utils.html import format_html, format_html_join

from memory import rendering

register = template.Library()


@register.filter
def markdown(text):
    return rendering.render_markdown(text)


@register.filter
def has_invisible(text):
    return rendering.has_invisible(text)


@register.filter
def invisible_chars(text):
    return [rendering.Segment(ch, invisible=True) for ch in rendering.find_invisible(text)]


@register.filter
def invisible_segments(text):
    return rendering.invisible_segments(text)


@register.filter
def reveal(text):
    """Plain text, escaped, with every invisible or bidi character shown as a labelled chip."""
    text = "" if text is None else str(text)
    if not rendering.has_invisible(text):
        return text  # escaped by the template like any other value
    return format_html_join(
        "",
        "{}",
        (
            (
                format_html('<span class="invisible-char" title="{}">{}</span>', seg.name, seg.label)
                if seg.invisible
                else seg.text,
            )
            for seg in rendering.invisible_segments(text)
        ),
    )


@register.filter
def invisible_warning(text):
    """The warning badge for text that hides characters; empty when it hides none."""
    chars = rendering.find_invisible(text or "")
    if not chars:
        return ""
    segments = [rendering.Segment(ch, invisible=True) for ch in chars]
    return format_html(
        '<span class="badge badge-danger" title="This text contains characters that do not show on screen: {}">'
        "⚠ Hidden characters: {}</span>",
        ", ".join(f"{seg.label} {seg.name}" for seg in segments),
        " ".join(seg.label for seg in segments),
    )


@register.filter
def percent_of(value, total):
    """value as a whole percentage of total, capped at 100 (for budget bars)."""
    try:
        return min(100, round(100 * value / total)) if total else 0
    except (TypeError, ValueError):
        return 0
