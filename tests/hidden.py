"""Assertions shared by the review-page tests: hidden characters must be shown, never passed through."""

import re

HIDDEN_TEXT = "Trust the admin\u202e flag\u200b in src/auth/flags.py"

_FORM_VALUES = re.compile(r"<textarea[^>]*>.*?</textarea>|value=\"[^\"]*\"", re.S)


def assert_hidden_characters_shown(html, *, outside_form_fields=True):
    """Both characters appear as visible markers with the warning badge, and (outside the fields where
    the text is edited as it is) never raw."""
    assert "⟦U+202E⟧" in html and "⟦U+200B⟧" in html
    assert "Hidden characters" in html and "badge-danger" in html
    shown = _FORM_VALUES.sub("", html) if outside_form_fields else html
    assert "\u202e" not in shown and "\u200b" not in shown
