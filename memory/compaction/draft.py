"""A compaction draft (proposed lines + drops), how model output is parsed into one, and the rules it must pass.

The model writes one line per proposed lesson and cites the input lessons it comes from:

    - [OBSERVATION] Retry uses a fixed 1s delay (ref: src/queue/worker.ts#L88-L95) {ids: 12, 15}
    DROP {ids: 7, 9}: too vague to act on

Anything else is a format error: the draft is stored as invalid and never applied.
"""

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from django.core.exceptions import ValidationError

from memory.models import ALL_CATEGORIES, CompactionProposal, ProposalDrop, ProposalLine
from memory.refs import parse_ref_list
from memory.services import validate_lesson_fields

LINE_RE = re.compile(r"^- \[(?P<category>[^\]]*)\] (?P<body>.*?)\s*\{ids:(?P<ids>[^{}]*)\}$")
DROP_RE = re.compile(r"^DROP \{ids:(?P<ids>[^{}]*)\}\s*:?\s*(?P<reason>.*)$")
REFS_RE = re.compile(r"^(?P<text>.*?)\s*\(ref:\s*(?P<refs>[^()]*)\)$")
ID_RE = re.compile(r"^#?(\d+)$")

KEPT, MERGED, REWRITTEN = "kept", "merged", "rewritten"
UNLISTED_DROP_REASON = "Left out by the compactor without a reason."


@dataclass
class DraftLine:
    category: str
    text: str
    refs: list  # ref texts, normalised (path#L1-L2)
    source_ids: list
    kind: str = ""
    edited: bool = False
    origin: str = ""  # "output line 4", for error messages


@dataclass
class DraftDrop:
    lesson_id: int
    reason: str
    listed: bool = True
    had_refs: bool = False


@dataclass
class Draft:
    lines: list = field(default_factory=list)
    drops: list = field(default_factory=list)
    errors: list = field(default_factory=list)
    raw_output: str = ""
    engine_failed: bool = False


@dataclass(frozen=True)
class InputLesson:
    """What the rules need to know about one lesson of the working memory being compacted."""

    id: int
    category: str
    text: str
    refs: tuple
    must_keep_reason: str  # "protected", "critical" or ""


def input_lessons(lessons):
    """InputLesson for each lesson (refs must be prefetched, or read into `ref_list`)."""
    result = []
    for lesson in lessons:
        reason = "protected" if lesson.protected else ("critical" if lesson.relevance == "critical" else "")
        refs = tuple(r.as_text() for r in (lesson.ref_list if hasattr(lesson, "ref_list") else lesson.refs.all()))
        result.append(InputLesson(lesson.pk, lesson.category, lesson.text, refs, reason))
    return result


def _parse_ids(raw, where, errors):
    ids = []
    for item in raw.split(","):
        item = item.strip()
        match = ID_RE.match(item)
        if not match:
            errors.append(f"{where}: {item!r} is not a lesson id; cite ids as {{ids: 12, 15}}.")
            return None
        ids.append(int(match.group(1)))
    return ids


def normalise_refs(raw, where, errors):
    try:
        return [ref.as_text() for ref in parse_ref_list(raw)]
    except ValidationError as exc:
        errors.append(f"{where}: bad reference: {' '.join(exc.messages)}")
        return None


def parse_output(text):
    """Parse model output into a Draft; every line that does not fit the format is an error."""
    draft = Draft(raw_output=text or "")
    for number, raw in enumerate((text or "").splitlines(), start=1):
        line = raw.strip()
        if not line:
            continue
        where = f"Output line {number}"
        drop = DROP_RE.match(line)
        if drop:
            ids = _parse_ids(drop["ids"], where, draft.errors)
            if ids:
                reason = drop["reason"].strip() or "Dropped by the compactor (no reason given)."
                draft.drops.extend(DraftDrop(lesson_id=i, reason=reason[:500]) for i in ids)
            continue
        match = LINE_RE.match(line)
        if not match:
            draft.errors.append(
                f'{where} is not in the form "- [CATEGORY] text (ref: path#L1-L2) {{ids: 12, 15}}": {line[:120]!r}'
            )
            continue
        ids = _parse_ids(match["ids"], where, draft.errors)
        if ids is None:
            continue
        if not ids:
            draft.errors.append(f"{where} cites no input lesson ids.")
            continue
        body, refs = match["body"].strip(), []
        ref_match = REFS_RE.match(body)
        if ref_match:
            refs = normalise_refs(ref_match["refs"], where, draft.errors)
            if refs is None:
                continue
            body = ref_match["text"].strip()
        draft.lines.append(DraftLine(category=match["category"], text=body, refs=refs, source_ids=ids, origin=where))
    return draft


def line_kind(line, inputs_by_id, cited_count):
    """kept: one source, unchanged and cited by no other line; merged: several sources; else rewritten."""
    sources = set(line.source_ids)
    if len(sources) > 1:
        return MERGED
    (source_id,) = sources
    source = inputs_by_id.get(source_id)
    if (
        source is not None
        and cited_count.get(source_id, 0) == 1
        and source.category == line.category
        and source.text == line.text
        and tuple(line.refs) == source.refs
    ):
        return KEPT
    return REWRITTEN


def effective_target(target, inputs):
    """Must-keep lessons are never dropped, so when they alone exceed the target they set the limit."""
    return max(target, sum(1 for i in inputs if i.must_keep_reason))


def validate(draft, inputs, target):
    """Check a draft against the working memory it compacts. Returns the list of errors ([] = applicable).

    Also fills in each line's kind and records the lessons left out without being listed.
    """
    errors = list(draft.errors)
    if draft.engine_failed:
        return errors
    if not draft.lines:
        # Every other rule would just repeat that nothing came back.
        draft.drops = []
        return [*errors, "The proposal has no lines; compaction never empties working memory."]
    inputs_by_id = {i.id: i for i in inputs}
    target = effective_target(target, inputs)

    if len(draft.lines) > target:
        errors.append(f"The proposal has {len(draft.lines)} lines; at most {target} are allowed.")
    cited_count = _cited_count(draft.lines)
    errors += _line_errors(draft.lines, inputs_by_id)
    listed_drops = {}
    errors += _drop_errors(draft.drops, inputs_by_id, cited_count, listed_drops)
    for line in draft.lines:
        line.kind = line_kind(line, inputs_by_id, cited_count)
    errors += _must_keep_errors(draft.lines, inputs, cited_count)
    errors += _lost_ref_errors(draft.lines, inputs, listed_drops)
    draft.drops = _drops(inputs, listed_drops, cited_count)
    return errors


def _cited_count(lines):
    """{lesson id: how many proposed lines cite it}."""
    cited_count = {}
    for line in lines:
        for source_id in dict.fromkeys(line.source_ids):
            cited_count[source_id] = cited_count.get(source_id, 0) + 1
    return cited_count


def _line_errors(lines, inputs_by_id):
    """Each proposed line: a working memory category, valid lesson text, and citing only lessons being compacted."""
    errors = []
    for index, line in enumerate(lines, start=1):
        where = line.origin or f"Line {index}"
        if line.category not in ALL_CATEGORIES:
            errors.append(f"{where}: [{line.category}] is not a working memory category ({', '.join(ALL_CATEGORIES)}).")
        try:
            validate_lesson_fields(
                tier="working",
                category=line.category if line.category in ALL_CATEGORIES else ALL_CATEGORIES[0],
                text=line.text,
                relevance="medium",
            )
        except ValidationError as exc:
            errors.append(f"{where}: {' '.join(exc.messages)}")
        for source_id in dict.fromkeys(line.source_ids):
            if source_id not in inputs_by_id:
                errors.append(f"{where} cites lesson #{source_id}, which is not in the working memory being compacted.")
    return errors


def _drop_errors(drops, inputs_by_id, cited_count, listed_drops):
    """Each listed drop names a lesson being compacted that no line cites; fills `listed_drops` (first one wins)."""
    errors = []
    for drop in drops:
        if drop.lesson_id not in inputs_by_id:
            errors.append(
                f"The proposal drops lesson #{drop.lesson_id}, which is not in the working memory being compacted."
            )
            continue
        if drop.lesson_id in cited_count:
            errors.append(f"Lesson #{drop.lesson_id} is both listed as dropped and cited by a proposed line.")
        listed_drops.setdefault(drop.lesson_id, drop)
    return errors


def _must_keep_errors(lines, inputs, cited_count):
    """A must-keep lesson stays unchanged, on a line of its own."""
    errors = []
    for lesson in inputs:
        if not lesson.must_keep_reason:
            continue
        own_lines = [line for line in lines if list(dict.fromkeys(line.source_ids)) == [lesson.id]]
        unchanged = [
            line
            for line in own_lines
            if line.text == lesson.text
            and tuple(line.refs) == lesson.refs
            and (line.category == lesson.category or not lesson.category)
            and cited_count.get(lesson.id) == 1
        ]
        if unchanged:
            continue
        if lesson.id in cited_count:
            errors.append(
                f"Lesson #{lesson.id} is {lesson.must_keep_reason}: it must be kept unchanged on a line "
                "of its own, but the proposal changes or merges it."
            )
        else:
            errors.append(
                f"Lesson #{lesson.id} is {lesson.must_keep_reason}: it must be kept unchanged, but the "
                "proposal leaves it out."
            )
    return errors


def _lost_ref_errors(lines, inputs, listed_drops):
    """Every ref of a lesson not listed as dropped is on some proposed line."""
    errors = []
    present_refs = {ref for line in lines for ref in line.refs}
    for lesson in inputs:
        if lesson.id in listed_drops:
            continue
        for ref in lesson.refs:
            if ref not in present_refs:
                errors.append(
                    f"Ref {ref} of lesson #{lesson.id} is in no proposed line, and lesson #{lesson.id} "
                    "is not listed as dropped."
                )
    return errors


def _drops(inputs, listed_drops, cited_count):
    """The lessons the draft leaves out, in input order: those listed as dropped and those no line cites."""
    drops = []
    for lesson in inputs:
        if lesson.id in listed_drops:
            drop = listed_drops[lesson.id]
            drops.append(DraftDrop(lesson.id, drop.reason, listed=True, had_refs=bool(lesson.refs)))
        elif lesson.id not in cited_count:
            drops.append(DraftDrop(lesson.id, UNLISTED_DROP_REASON, listed=False, had_refs=bool(lesson.refs)))
    return drops


def draft_from_rows(
    proposal: CompactionProposal,
    lines: Iterable[ProposalLine] | None = None,
    drops: Iterable[ProposalDrop] | None = None,
) -> Draft:
    """The draft a stored proposal holds (its rows, or the `lines` and `drops` given), as validation reads it."""
    lines = proposal.lines.order_by("position") if lines is None else lines
    drops = proposal.drops.all() if drops is None else drops
    return Draft(
        lines=[
            DraftLine(
                category=line.category,
                text=line.text,
                refs=list(line.refs),
                source_ids=list(line.source_ids),
                edited=line.edited,
                origin=f"Line {line.position}",
            )
            for line in lines
        ],
        drops=[DraftDrop(lesson_id=d.lesson_id, reason=d.reason) for d in drops if d.listed],
    )


def parse_edited_line(*, category, text, refs):
    """A line as a reviewer typed it in the edit form; raises ValidationError with a clear message."""
    errors = []
    category = (category or "").strip().upper()
    text = (text or "").strip()
    if category not in ALL_CATEGORIES:
        errors.append(f"Choose a category: {', '.join(ALL_CATEGORIES)}.")
    parsed_refs = normalise_refs(refs or "", "Refs", errors)
    if not errors:
        try:
            validate_lesson_fields(tier="working", category=category, text=text, relevance="medium")
        except ValidationError as exc:
            errors.extend(exc.messages)
    if errors:
        raise ValidationError(errors)
    return category, text, parsed_refs
