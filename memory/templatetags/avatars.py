"""`{% load avatars %}{% avatar persona %}`: a persona's initials on a colour of its own.

Avatars used to be emoji, which a machine without an emoji font draws as empty boxes; initials
render everywhere. An avatar given as an https image URL is shown as that image.
"""

import hashlib

from django import template
from django.utils.html import format_html

register = template.Library()

PALETTE_SIZE = 8  # .avatar-c0 … .avatar-c7 in app.css


def initials(name):
    """Up to two letters: the first of each of the first two words ("Legacy Bot" -> "LB", "Atlas" -> "A")."""
    words = [w for w in (name or "").replace("-", " ").replace("_", " ").split() if w[:1].isalnum()]
    return "".join(w[0] for w in words[:2]).upper() or "?"


@register.simple_tag
def avatar(persona, size=""):
    name = getattr(persona, "name", "") or ""
    image = (getattr(persona, "avatar", "") or "").strip()
    size_class = f" avatar-{size}" if size else ""
    if image.startswith("https://"):
        return format_html('<img class="avatar{}" src="{}" alt="" width="28" height="28">', size_class, image)
    colour = int(hashlib.sha1(name.lower().encode()).hexdigest(), 16) % PALETTE_SIZE
    return format_html(
        '<span class="avatar avatar-initial avatar-c{}{}" aria-hidden="true">{}</span>',
        colour,
        size_class,
        initials(name),
    )
