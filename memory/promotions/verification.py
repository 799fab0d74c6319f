"""A model checks each proposed group before it reaches the inbox.

Words can be shared by lessons that say different things (a decoy citing the same file). With a
model engine, each group is shown to the model, which answers through one tool, `verify_group`:
which members state the same lesson, and whether that lesson deserves the permanent tier. Members
it leaves out leave the group; a group it does not think core-worthy, or that falls below the
distinct-dates rule once trimmed, is dropped. The offline engine has no model: groups pass as
found.

An answer that cannot be used (no tool call, unreadable arguments, ids not in the group) raises
VerificationError: the detection run stops before anything is stored, so no candidate changes.
"""

from dataclasses import dataclass

from memory.engines.base import Tool, single_tool_answer
from memory.promotions.detection import Group, group_of

PURPOSE = "promotion verification"

SYSTEM_PROMPT = (
    "You review proposals for the permanent memory of an AI agent that works on a software project. "
    "The agent wrote short lessons on different days; a word-matching step grouped some of them as "
    "restatements of one lesson. Word matching is fooled by lessons that mention the same file or "
    "words but make a different point. Judge meaning, not wording."
)

PROMPT_TEMPLATE = """Proposed group (id, date, lesson):
{lessons}

Call verify_group exactly once:
- same_lesson: the ids of the lessons that state one and the same lesson. Leave out any lesson
  that makes a different point, even if it shares words or a file with the others. If no two
  lessons agree, give an empty list.
- deserves_core: true if that shared lesson is durable enough for the permanent tier (a pattern,
  decision or piece of architecture that will still hold later), false for a one-off incident,
  a passing status or a to-do.
- reason: one short sentence a reviewer can read.
"""

VERIFY_TOOL = Tool(
    name="verify_group",
    description="Report which lessons of the group state the same lesson and whether it belongs in core.",
    input_schema={
        "type": "object",
        "properties": {
            "same_lesson": {
                "type": "array",
                "items": {"type": "integer"},
                "description": "ids of the lessons that state one and the same lesson",
            },
            "deserves_core": {"type": "boolean"},
            "reason": {"type": "string", "description": "one sentence for the reviewer"},
        },
        "required": ["same_lesson", "deserves_core", "reason"],
        "additionalProperties": False,
    },
)

MAX_REASON_CHARS = 300


class VerificationError(Exception):
    """The model's answer could not be used; nothing was changed."""


@dataclass
class Verdict:
    same_lesson: list
    deserves_core: bool
    reason: str


@dataclass
class Verified:
    group: Group
    note: str  # what the model said, for the reviewer


def parse_verdict(arguments, group_ids):
    """The tool arguments as a Verdict, or VerificationError saying what is wrong with them."""
    if not isinstance(arguments, dict):
        raise VerificationError("the answer is not a JSON object")
    missing = [k for k in ("same_lesson", "deserves_core", "reason") if k not in arguments]
    if missing:
        raise VerificationError(f"the answer lacks {', '.join(missing)}")
    ids = arguments["same_lesson"]
    if not isinstance(ids, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in ids):
        raise VerificationError("same_lesson must be a list of lesson ids (whole numbers)")
    unknown = sorted(set(ids) - set(group_ids))
    if unknown:
        raise VerificationError(f"same_lesson names lessons that are not in the group: {unknown}")
    if not isinstance(arguments["deserves_core"], bool):
        raise VerificationError("deserves_core must be true or false")
    reason = arguments["reason"]
    if not isinstance(reason, str):
        raise VerificationError("reason must be text")
    return Verdict(
        same_lesson=sorted(set(ids)),
        deserves_core=arguments["deserves_core"],
        reason=" ".join(reason.split())[:MAX_REASON_CHARS],
    )


def _prompt(group, lessons):
    rows = [f"- {pk} | {lessons[pk].lesson_date.isoformat()} | {lessons[pk].text}" for pk in group.lesson_ids]
    return PROMPT_TEMPLATE.format(lessons="\n".join(rows))


def ask(engine, group, lessons):
    """One model call for one group; returns its Verdict or raises VerificationError."""
    answer = single_tool_answer(
        engine,
        system=SYSTEM_PROMPT,
        prompt=_prompt(group, lessons),
        tool=VERIFY_TOOL,
        purpose=PURPOSE,
        error=VerificationError,
    )
    return parse_verdict(answer, group.lesson_ids)


def verify(groups, *, engine, lessons, facts, min_dates):
    """Each group checked by the model: [Verified] for the groups that stay, trimmed to their members.

    lessons: {id: object with .text and .lesson_date}; facts: {id: LessonFacts} (for the dates).
    """
    kept = []
    label = getattr(engine, "provider", "model")
    for group in groups:
        try:
            verdict = ask(engine, group, lessons)
        except VerificationError as exc:
            raise VerificationError(
                f"Verification of the group of lessons {', '.join(map(str, group.lesson_ids))} failed: {exc}. "
                "No candidate was changed."
            ) from None
        if not verdict.deserves_core:
            continue
        members = [facts[i] for i in verdict.same_lesson]
        if not members or (len(members) < 2 and len(members[0].dates) < min_dates):
            continue
        trimmed = group_of(members, group.cohesion)
        if trimmed.distinct_dates < min_dates:
            continue
        left_out = sorted(set(group.lesson_ids) - set(verdict.same_lesson))
        note = f"Checked by {label}: {verdict.reason}"
        if left_out:
            note += f" (left out: {', '.join(f'#{i}' for i in left_out)})"
        kept.append(Verified(group=trimmed, note=note))
    return kept
