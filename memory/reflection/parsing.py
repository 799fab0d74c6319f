"""Parse a reflection answer: 1–5 bullets `- [CATEGORY] lesson (ref: path#Lx-Ly)`.

Either the whole answer is usable or nothing is stored: a bullet with an unknown or missing
category, a bad reference, more than five bullets or no bullet at all makes the answer malformed.
Lines that are not bullets (a stray preamble, code fences) are ignored.
"""

import re
from dataclasses import dataclass, field

from django.core.exceptions import ValidationError

from memory.models import ALL_CATEGORIES
from memory.reflection.prompts import MAX_BULLETS
from memory.refs import parse_ref_list
from memory.services import MAX_LESSON_CHARS


class ReflectionParseError(ValueError):
    """The model's answer cannot be stored; the message says why."""


@dataclass
class ParsedLesson:
    category: str
    text: str
    refs: list = field(default_factory=list)
    vague: bool = False


_BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+(?P<body>.*)$")
_TAG = re.compile(r"^\[(?P<tag>[^\]]*)\]\s*")
_REF_SUFFIX = re.compile(r"\s*\(\s*refs?\s*:\s*(?P<refs>[^()]*)\)\s*\.?\s*$", re.I)

# What makes a lesson specific: a path or file name, a code symbol, or a number.
_SPECIFIC = [
    re.compile(r"[\w.-]+/[\w./-]+"),  # a path
    re.compile(r"\b[\w-]+\.(?:[a-z]{1,5})\b"),  # a file name: views.py, app.ts
    re.compile(r"\b\w+\(\)"),  # a call: export_orders()
    re.compile(r"`[^`]+`"),  # inline code
    re.compile(r"\b[a-z]+_[a-z0-9_]+\b"),  # snake_case identifier
    re.compile(r"\b[a-z]+[A-Z]\w*\b"),  # camelCase identifier
    re.compile(r"\b[A-Z][a-z]+[A-Z]\w*\b"),  # CamelCase identifier
    re.compile(r"\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b"),  # CONSTANT_NAME
    re.compile(r"\d"),  # a number
]


def is_vague(text, refs=()):
    """No file, symbol or number: a lesson nobody can act on."""
    if refs:
        return False
    return not any(pattern.search(text) for pattern in _SPECIFIC)


def parse_bullet(line):
    """One bullet line → ParsedLesson; raises ReflectionParseError naming the problem."""
    match = _BULLET.match(line)
    if not match:
        raise ReflectionParseError(f"not a bullet: {line.strip()[:80]!r}")
    body = match["body"].strip()
    tag = _TAG.match(body)
    if not tag:
        raise ReflectionParseError(f"bullet has no [CATEGORY] tag: {body[:80]!r}")
    category = tag["tag"].strip().upper()
    if category not in ALL_CATEGORIES:
        raise ReflectionParseError(
            f"unknown category [{tag['tag'].strip()}] (expected one of {', '.join(ALL_CATEGORIES)})"
        )
    body = body[tag.end() :]
    # A doubled tag (`[PATTERN] [PATTERN] text`) is a known slip; read it as one.
    again = _TAG.match(body)
    if again and again["tag"].strip().upper() == category:
        body = body[again.end() :]
    refs = []
    ref_match = _REF_SUFFIX.search(body)
    if ref_match:
        try:
            refs = parse_ref_list(ref_match["refs"])
        except ValidationError as exc:
            raise ReflectionParseError(f"bad reference in {body[:80]!r}: {' '.join(exc.messages)}") from None
        body = body[: ref_match.start()]
    text = body.strip()
    if not text:
        raise ReflectionParseError(f"bullet [{category}] has no lesson text")
    if len(text) > MAX_LESSON_CHARS:
        raise ReflectionParseError(f"a lesson is longer than {MAX_LESSON_CHARS} characters")
    return ParsedLesson(category=category, text=text, refs=refs, vague=is_vague(text, refs))


def parse_reflection(answer):
    """The lessons in a model's answer; raises ReflectionParseError when it cannot be stored."""
    bullets = [line for line in (answer or "").splitlines() if _BULLET.match(line)]
    if not bullets:
        raise ReflectionParseError("the answer has no bullets in the form - [CATEGORY] lesson")
    if len(bullets) > MAX_BULLETS:
        raise ReflectionParseError(f"the answer has {len(bullets)} bullets; at most {MAX_BULLETS} are allowed")
    return [parse_bullet(line) for line in bullets]
