"""A lesson's columns, in one table, and the snapshot of them that history records and revert restores.

LESSON_COLUMNS drives lesson_snapshot, apply_snapshot (a revert) and lessons_bulk_create (what it
writes per row and the snapshot it records, memory/history/bulk.py). A Lesson field left out of the
table is not recorded, and the bulk writer fills it with the model's default.
"""

import json
from collections.abc import Callable, Sequence
from datetime import date
from operator import attrgetter
from types import SimpleNamespace
from typing import Any, NamedTuple

from django.db import models

from memory.models import Lesson, LessonRef, LessonStatus
from memory.refs import Ref, parse_ref_list
from memory.signals import lesson_refs_writing

# How lessons_bulk_create writes a column: every row its own value (ROW); per row only when some
# lesson of the call differs from the model's default, a constant otherwise (IF_SET: an import never
# sets them); or always the model's default (DEFAULT). ROW and IF_SET columns are NewLesson fields.
ROW, IF_SET, DEFAULT = "row", "if set", "default"


class LessonColumn(NamedTuple):
    name: str  # the Lesson field's attname
    recorded: bool  # in the snapshot: history records it, revert restores it, a write that changes it is a change
    bulk: str  # ROW, IF_SET or DEFAULT
    to_json: Callable[[Any], Any] | None = None  # field value -> snapshot value (None: kept as it is)
    from_json: Callable[[Any], Any] | None = None  # snapshot value -> field value (None: kept as it is)
    # Recorded only when it differs from the model's default: snapshots taken before the column
    # existed still equal the lesson's snapshot now, so their batches stay revertible.
    only_if_set: bool = False


def _optional(convert: Callable[[Any], Any]) -> Callable[[Any], Any]:
    return lambda value: None if value is None else convert(value)


LESSON_COLUMNS = (
    LessonColumn("memory_id", recorded=False, bulk=ROW),
    LessonColumn("tier", recorded=True, bulk=ROW),
    LessonColumn("category", recorded=True, bulk=ROW),
    LessonColumn("text", recorded=True, bulk=ROW),
    LessonColumn("relevance", recorded=True, bulk=IF_SET),
    LessonColumn("protected", recorded=True, bulk=IF_SET),
    LessonColumn("status", recorded=True, bulk=DEFAULT),
    LessonColumn("lesson_date", recorded=True, bulk=ROW, to_json=date.isoformat, from_json=date.fromisoformat),
    LessonColumn(
        "expires_on",
        recorded=True,
        bulk=IF_SET,
        to_json=_optional(date.isoformat),
        from_json=_optional(date.fromisoformat),
        only_if_set=True,
    ),
    LessonColumn("expires_when", recorded=True, bulk=IF_SET, only_if_set=True),
    LessonColumn("section", recorded=False, bulk=ROW),
    LessonColumn("undated", recorded=False, bulk=ROW),
    LessonColumn("unparsed", recorded=False, bulk=ROW),
    LessonColumn("raw_line", recorded=False, bulk=ROW),
    LessonColumn("section_heading", recorded=False, bulk=ROW),
)
RECORDED = tuple(column for column in LESSON_COLUMNS if column.recorded)


def field_default(name: str) -> Any:
    """The value a new lesson takes for the field `name` when none is given."""
    field = Lesson._meta.get_field(name)
    assert isinstance(field, models.Field)
    return field.get_default()


def lesson_snapshot(lesson: Any, refs: Sequence[Any] | None = None) -> dict[str, Any]:
    """The state of a lesson that history records and revert restores: its recorded columns and refs."""
    if refs is None:
        refs = list(lesson.refs.all())
    return _snapshot(lesson, [r.as_text() for r in refs])


_RECORDED_NAMES = tuple(c.name for c in RECORDED)
_read_recorded = attrgetter(*_RECORDED_NAMES)
_CONVERTED = tuple((c.name, c.to_json) for c in RECORDED if c.to_json is not None)
_ONLY_IF_SET = tuple((c.name, field_default(c.name)) for c in RECORDED if c.only_if_set)


def _snapshot(lesson: Any, ref_texts: list[str]) -> dict[str, Any]:
    snapshot = dict(zip(_RECORDED_NAMES, _read_recorded(lesson)))
    for name, default in _ONLY_IF_SET:
        if snapshot[name] == default:
            del snapshot[name]
    for name, to_json in _CONVERTED:
        if name in snapshot:
            snapshot[name] = to_json(snapshot[name])
    snapshot["refs"] = ref_texts
    return snapshot


def apply_snapshot(lesson: Lesson, snapshot: dict[str, Any]) -> None:
    """Give the lesson the state `snapshot` recorded (a revert), its refs included; saves it."""
    for c in RECORDED:
        if c.name not in snapshot and c.only_if_set:
            setattr(lesson, c.name, field_default(c.name))
            continue
        value = snapshot[c.name]
        setattr(lesson, c.name, value if c.from_json is None else c.from_json(value))
    if lesson.status != LessonStatus.SUPERSEDED:
        lesson.superseded_by = None  # a successor only means something while the lesson is superseded
    lesson.save()
    replace_refs(lesson, parse_ref_list("\n".join(snapshot["refs"])))


def replace_refs(lesson: Lesson, refs: Sequence[Ref], *, new: bool = False) -> None:
    """Store `refs` as the lesson's refs, in order (`new`: the lesson was just created and has none)."""
    if not new:
        lesson.refs.all().delete()
    rows = [
        LessonRef(lesson=lesson, path=r.path, start_line=r.start_line, end_line=r.end_line, position=i)
        for i, r in enumerate(refs)
    ]
    if rows:
        # The refs slice points each row at its anchor (memory/refs/receivers.py).
        lesson_refs_writing.send(sender=LessonRef, lesson=lesson, rows=rows, new=new)
    LessonRef.objects.bulk_create(rows)


# --- the snapshot of a lesson written without a model instance (lessons_bulk_create) ---------

_json_string = json.encoder.encode_basestring_ascii  # how json.dumps writes a string by default
_TEXT, _REFS = "\x00text\x00", "\x00refs\x00"  # stand-ins, cut out of an encoded snapshot


def new_snapshot_writer(given: Sequence[str]) -> Callable[[tuple, str, Sequence[Ref]], str]:
    """A function (values of the recorded columns named `given`, text, refs) -> the JSON text of
    lesson_snapshot for a new lesson, whose other recorded columns hold the model's defaults.

    Encoding 100,000 snapshot dicts one by one was a sixth of an import's time. So each set of
    values (most lessons share theirs) is encoded once, by json.dumps of lesson_snapshot's own dict
    with stand-ins for the text and the refs; per lesson only its strings are escaped, exactly as
    json.dumps escapes them, and put in their place.
    """
    defaults = {c.name: field_default(c.name) for c in RECORDED if c.name not in given}
    templates: dict[tuple, tuple[str, str, str]] = {}

    def write(values: tuple, text: str, refs: Sequence[Ref]) -> str:
        template = templates.get(values)
        if template is None:
            template = templates[values] = _template({**defaults, **dict(zip(given, values))})
        head, middle, tail = template
        if refs:
            return f"{head}{_json_string(text)}{middle}[{', '.join([_json_string(r.as_text()) for r in refs])}]{tail}"
        return f"{head}{_json_string(text)}{middle}[]{tail}"

    return write


def _template(values: dict[str, Any]) -> tuple[str, str, str]:
    """The encoded snapshot of a lesson holding `values`, cut where its text and its refs go."""
    encoded = json.dumps(_snapshot(SimpleNamespace(**{**values, "text": _TEXT}), [_REFS]))
    head, text, rest = encoded.partition(json.dumps(_TEXT))
    middle, refs, tail = rest.partition(json.dumps([_REFS]))
    if not (text and refs):
        raise ValueError("a snapshot writes its text before its refs")
    return head, middle, tail
