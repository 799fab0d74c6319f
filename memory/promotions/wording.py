"""The proposed wording of a core lesson for a group of working lessons.

With a language model: one synthesized line, checked like any other lesson before it is shown.
Offline (or when the model's answer is unusable): the most specific member, with every member's refs.
"""

import re
from dataclasses import dataclass, field
from datetime import date

from django.core.exceptions import ValidationError

from memory.engines.base import EngineError
from memory.engines.registry import get_engine
from memory.models import CORE_CATEGORIES, Tier
from memory.promotions.text import significant_words
from memory.refs import Ref

SYSTEM_PROMPT = (
    "You curate the long-term memory of an AI agent working on a software project. Several short "
    "lessons the agent wrote on different days say the same thing. Merge them into ONE durable lesson "
    "for its permanent memory."
)

PROMPT_TEMPLATE = """Lessons (each with its date and code references):
{lessons}

Write exactly one line in this form and nothing else:
[CATEGORY] lesson text

Rules:
- CATEGORY is PATTERN (a recurring way the code works or should be written), DECISION (a choice the
  team made and why) or ARCHITECTURE (how the parts fit together).
- Keep every concrete detail the lessons share: file names, function names, numbers.
- One sentence, at most 300 characters, no Markdown, no references list (they are kept for you).

Good: [PATTERN] Webhook handlers verify the signature before parsing the body; parsing first let forged payloads reach the queue.
Bad: [PATTERN] Be careful with webhooks.   (vague: no file, symbol or consequence)
Bad: - [OBSERVATION] ...   (OBSERVATION is not a core category)
"""

_LINE = re.compile(r"^\s*(?:[-*]\s*)?\[(?P<cat>[A-Za-z]+)\]\s*(?:\[(?P=cat)\]\s*)?(?P<text>.+?)\s*$")
_TRAILING_REFS = re.compile(r"\s*\((?:ref|refs|promoted)\b[^)]*\)\s*$", re.IGNORECASE)
MAX_PROPOSED_CHARS = 500


@dataclass
class Member:
    """What wording needs of one supporting lesson."""

    pk: int
    text: str
    category: str
    lesson_date: date
    content_hash: str = ""
    words: frozenset[str] | None = field(default=None, repr=False)  # significant_words(text) when not given

    def __post_init__(self):
        if self.words is None:
            self.words = significant_words(self.text)


@dataclass
class Proposal:
    text: str
    category: str
    refs: list  # of Ref
    engine: str
    note: str = ""


def _union_refs(ordered_members):
    seen, refs = set(), []
    for _, member_refs in ordered_members:
        for ref in member_refs:
            key = ref.as_text()
            if key not in seen:
                seen.add(key)
                refs.append(Ref(path=ref.path, start_line=ref.start_line, end_line=ref.end_line))
    return refs


def _core_category(members, preferred=None):
    if preferred in CORE_CATEGORIES:
        return preferred
    counts = {}
    for lesson, _ in members:
        if lesson.category in CORE_CATEGORIES:
            counts[lesson.category] = counts.get(lesson.category, 0) + 1
    if counts:
        return max(sorted(counts), key=counts.get)
    return "PATTERN"


def _specificity(item):
    lesson, refs = item
    words = getattr(lesson, "words", None) or significant_words(lesson.text)
    return (len(refs), len(words), len(lesson.text), -lesson.pk)


def offline_proposal(members, note=""):
    """members: [(Member or Lesson, [Ref or LessonRef])]. The most specific lesson, with the refs of all."""
    ordered = sorted(members, key=_specificity, reverse=True)
    best, _ = ordered[0]
    return Proposal(
        text=best.text,
        category=_core_category(members, best.category),
        refs=_union_refs(ordered),
        engine="offline",
        note=note,
    )


def parse_model_line(raw):
    """[CATEGORY] text from the model's answer, or ValidationError saying what is wrong with it."""
    from memory.services import validate_lesson_fields

    lines = [line for line in (raw or "").strip().splitlines() if line.strip()]
    if not lines:
        raise ValidationError("the model returned nothing")
    if len(lines) > 1:
        raise ValidationError(f"the model returned {len(lines)} lines instead of one")
    match = _LINE.match(lines[0])
    if not match:
        raise ValidationError("the model's line does not start with a [CATEGORY] tag")
    category = match["cat"].upper()
    text = _TRAILING_REFS.sub("", match["text"]).strip()
    if category not in CORE_CATEGORIES:
        raise ValidationError(f"{category} is not a core category ({', '.join(CORE_CATEGORIES)})")
    if len(text) > MAX_PROPOSED_CHARS:
        raise ValidationError(
            f"the model's lesson is {len(text)} characters; at most {MAX_PROPOSED_CHARS} are accepted"
        )
    validate_lesson_fields(tier=Tier.CORE, category=category, text=text, relevance="medium")
    return category, text


def _prompt(members):
    rows = []
    for lesson, refs in sorted(members, key=lambda item: (item[0].lesson_date, item[0].pk)):
        ref_text = ", ".join(r.as_text() for r in refs) or "none"
        rows.append(
            f"- {lesson.lesson_date.isoformat()} [{lesson.category or 'untagged'}] {lesson.text} (refs: {ref_text})"
        )
    return PROMPT_TEMPLATE.format(lessons="\n".join(rows))


def propose(memory, members, engine=None):
    """The proposal for one group. The engine is the memory's persona's unless one is given."""
    if engine is None:
        try:
            engine = get_engine(memory.persona, memory=memory)
        except EngineError as exc:
            return offline_proposal(
                members, note=f"The model could not be used ({exc}); showing the most specific lesson."
            )
    if engine.provider == "offline":
        return offline_proposal(members)
    label = engine.provider
    try:
        completion = engine.complete(system=SYSTEM_PROMPT, prompt=_prompt(members), purpose="promotion")
        if completion.model:
            label = f"{engine.provider}:{completion.model}"
        category, text = parse_model_line(completion.text)
    except EngineError as exc:
        return offline_proposal(members, note=f"The {label} call failed ({exc}); showing the most specific lesson.")
    except ValidationError as exc:
        reason = "; ".join(exc.messages)
        return offline_proposal(
            members, note=f"The {label} answer was not usable ({reason}); showing the most specific lesson."
        )
    ordered = sorted(members, key=_specificity, reverse=True)
    return Proposal(text=text, category=category, refs=_union_refs(ordered), engine=label[:40])
