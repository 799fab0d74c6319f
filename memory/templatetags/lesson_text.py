"""Template filters for showing untrusted lesson text: `{% load lesson_text %}`.

- `text|markdown`          lesson Markdown as safe inline HTML, invisible characters as chips
- `text|has_invisible`     True when text hides zero-width or bidi characters (show a warning)
- `text|invisible_chars`   the distinct hidden characters, as Segments (`.label`, `.name`)
- `text|invisible_segments` text split for `memory/partials/reveal.html` (plain text with chips)
"""

from django import template

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
def percent_of(value, total):
    """value as a whole percentage of total, capped at 100 (for budget bars)."""
    try:
        return min(100, round(100 * value / total)) if total else 0
    except (TypeError, ValueError):
        return 0
