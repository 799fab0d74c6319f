"""What a lesson's fields and refs may hold, checked before any write."""

from collections.abc import Iterable
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError

from memory.models import ALL_CATEGORIES, CORE_CATEGORIES, Relevance, Tier
from memory.refs import Ref, parse_ref_list
from memory.textcheck import text_problem

# The cap on one lesson's text (LESSON_MAX_CHARS), as read at start; checks read the setting itself.
MAX_LESSON_CHARS = settings.LESSON_MAX_CHARS

REASON_MAX_CHARS = 4000


def clean_refs(refs: str | Iterable[Any] | None) -> list[Ref]:
    """Refs given as text, Ref objects or a mix, parsed and validated (an error names the refs field)."""
    if refs is None:
        return []
    if isinstance(refs, str):
        try:
            return parse_ref_list(refs)
        except ValidationError as exc:
            raise ValidationError({"refs": exc.messages}) from None
    cleaned = []
    for ref in refs:
        if isinstance(ref, Ref):
            cleaned.append(ref)
        else:
            try:
                cleaned.extend(parse_ref_list(str(ref)))
            except ValidationError as exc:
                raise ValidationError({"refs": exc.messages}) from None
    return cleaned


def validate_lesson_fields(*, tier: str, category: str, text: str, relevance: str) -> None:
    errors = {}
    if tier not in (Tier.CORE, Tier.WORKING):
        errors["tier"] = f"tier must be core or working, not {tier!r}"
    allowed = CORE_CATEGORIES if tier == Tier.CORE else ALL_CATEGORIES
    if category not in allowed:
        errors["category"] = f"category for {tier} lessons must be one of {', '.join(allowed)}, not {category!r}"
    problem = text_problem(text.strip() if isinstance(text, str) else text, max_chars=settings.LESSON_MAX_CHARS)
    if not text or not text.strip():
        errors["text"] = "lesson text must not be empty"
    elif problem:
        errors["text"] = f"lesson text {problem}"
    if relevance not in Relevance.values:
        errors["relevance"] = f"relevance must be one of {', '.join(Relevance.values)}, not {relevance!r}"
    if errors:
        raise ValidationError(errors)
