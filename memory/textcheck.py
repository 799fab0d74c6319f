"""The one rule for text that comes from outside: the API, dashboard forms, the admin and imports.

Control characters are refused everywhere (PostgreSQL cannot store NUL, and the others are
invisible to a reviewer); tab, newline and carriage return only where text may span lines.
Single-line text also refuses every other line break: carriage return, U+2028 and U+2029.
Lone surrogates cannot be stored as UTF-8 and are refused too.

The same rules are written as JSON-schema patterns for the API, so the schema says exactly what
the API accepts.
"""

import re

from django.core.exceptions import ValidationError

# C0 controls, DEL and the C1 block; the multi-line class leaves out tab, newline and return.
_CONTROL_ALL = "\\x00-\\x1f\\x7f-\\x9f"
_CONTROL_MULTILINE = "\\x00-\\x08\\x0b\\x0c\\x0e-\\x1f\\x7f-\\x9f"
_LINE_SEPARATORS = "\\u2028\\u2029"

# JSON-schema (ECMA 262) patterns that Python's re reads the same way.
SINGLE_LINE_PATTERN = f"^[^{_CONTROL_ALL}{_LINE_SEPARATORS}]*$"
MULTI_LINE_PATTERN = f"^[^{_CONTROL_MULTILINE}]*$"
# Single-line text that must hold something besides spaces.
NON_BLANK_LINE_PATTERN = (
    f"^[^{_CONTROL_ALL}{_LINE_SEPARATORS}]*[^\\s{_CONTROL_ALL}{_LINE_SEPARATORS}][^{_CONTROL_ALL}{_LINE_SEPARATORS}]*$"
)
NON_BLANK_TEXT_PATTERN = f"^[^{_CONTROL_MULTILINE}]*[^\\s{_CONTROL_MULTILINE}][^{_CONTROL_MULTILINE}]*$"

_BAD_SINGLE = re.compile(f"[{_CONTROL_ALL}{_LINE_SEPARATORS}\\ud800-\\udfff]")
_BAD_MULTI = re.compile(f"[{_CONTROL_MULTILINE}\\ud800-\\udfff]")
_LINE_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"


def _describe(ch, position):
    where = f"(U+{ord(ch):04X}) at position {position}"
    if ch in _LINE_BREAKS:
        return f"must be a single line: it contains a line break {where}"
    if 0xD800 <= ord(ch) <= 0xDFFF:
        return f"contains an unpaired surrogate {where}, which is not text"
    return f"contains a control character {where}"


def text_problem(value, *, multiline=False, max_chars=None):
    """What is wrong with value as text from outside, or None when it is acceptable."""
    if not isinstance(value, str):
        return "must be text"
    bad = (_BAD_MULTI if multiline else _BAD_SINGLE).search(value)
    if bad:
        return _describe(bad.group(), bad.start() + 1)
    if max_chars is not None and len(value) > max_chars:
        return f"must be at most {max_chars} characters (got {len(value)})"
    return None


def check_text(value, *, field, multiline=False, max_chars=None):
    """value, or ValidationError({field: [message]}). Multi-line text has its line ends made \\n."""
    problem = text_problem(value, multiline=multiline, max_chars=max_chars)
    if problem:
        raise ValidationError({field: [f"{field.replace('_', ' ')} {problem}"]})
    if multiline:
        value = value.replace("\r\n", "\n").replace("\r", "\n")
    return value


def name_problem(value, *, what="name"):
    """Why value cannot name a persona or project (it is also a folder name on export), or None."""
    problem = text_problem(value)
    if problem:
        return f"the {what} {problem}"
    if not value.strip():
        return f"the {what} must not be blank"
    if "/" in value or "\\" in value:
        return f"the {what} may not contain / or \\ (it names a folder)"
    if value.strip().startswith("."):
        return f"the {what} may not start with a dot (it names a folder; . and .. are not names)"
    return None


# Ids and counts taken from forms and query strings: PostgreSQL's bigint holds at most this.
MAX_ID = 2**63 - 1


def bounded_id(raw):
    """The positive whole number in raw (ASCII digits only: "²".isdigit() is true), or None."""
    raw = (raw or "").strip()
    if not raw.isascii() or not raw.isdigit() or len(raw) > 19 or not 0 < int(raw) <= MAX_ID:
        return None
    return int(raw)


class TextValidator:
    """Django form and model field validator running the same rule."""

    def __init__(self, *, multiline=False):
        self.multiline = multiline

    def __call__(self, value):
        problem = text_problem(value, multiline=self.multiline)
        if problem:
            raise ValidationError(f"This text {problem}.", code="invalid_text")

    def __eq__(self, other):
        return isinstance(other, TextValidator) and other.multiline == self.multiline

    def deconstruct(self):
        return ("memory.textcheck.TextValidator", (), {"multiline": self.multiline})
