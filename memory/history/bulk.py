"""Bulk writes: many lessons in a few statements, with the history one by one would give them; and
the raw writes of many refs and ref anchors the refs check makes.

What lessons_bulk_create writes of each lesson and records of it comes from the table of a lesson's
columns (memory/history/snapshots.py); the rows go in through memory/history/rows.py.
"""

from collections.abc import Callable, Iterable, Sequence
from datetime import date, datetime
from operator import itemgetter
from typing import Any, NamedTuple

from django.utils import timezone

from memory.history.rows import RowInserter, insert_instances, update_by_pk
from memory.history.snapshots import (
    DEFAULT,
    IF_SET,
    LESSON_COLUMNS,
    RECORDED,
    ROW,
    field_default,
    lesson_snapshot,
    new_snapshot_writer,
)
from memory.models import Change, ChangeBatch, Lesson, LessonRef, LessonStatus, RefAnchor, Relevance, content_hash
from memory.refs import Ref


class NewLesson(NamedTuple):
    """One lesson for lessons_bulk_create: the batch its `create` change goes in, and its fields.

    Fields left out take the model's defaults, as Lesson.objects.create would give them. Its fields
    are named as the Lesson columns of LESSON_COLUMNS that lessons_bulk_create writes (ROW, IF_SET).
    """

    batch_id: int
    memory_id: int
    tier: str
    category: str
    text: str
    lesson_date: date
    section: int
    undated: bool = False
    unparsed: bool = False
    raw_line: str = ""
    section_heading: str = ""
    refs: Sequence[Ref] = ()  # in order
    relevance: str = Relevance.MEDIUM
    protected: bool = False
    expires_on: date | None = None
    expires_when: str = ""
    derived_from: Sequence[int] = ()  # ids of the lessons it was made from


def _getter(names: Sequence[str]) -> Callable[[NewLesson], tuple]:
    """The values of the NewLesson fields `names`, as a tuple: read by position, since an import
    passes 100,000 lessons and a field name costs a lookup each."""
    missing = [name for name in names if name not in NewLesson._fields]
    if missing:
        raise TypeError(f"NewLesson has no field for the lesson columns {missing} (see LESSON_COLUMNS)")
    positions = [NewLesson._fields.index(name) for name in names]
    if positions == list(range(positions[0], positions[-1] + 1)):
        return itemgetter(slice(positions[0], positions[-1] + 1))  # fields side by side: one slice
    get = itemgetter(*positions)
    return get if len(names) > 1 else lambda lesson: (get(lesson),)


# The Lesson columns written per row (the content hash of the text follows), and those written per
# row only when some lesson of the call sets them (an import never does).
_ROW_COLUMNS = tuple(c.name for c in LESSON_COLUMNS if c.bulk == ROW)
_IF_SET = tuple(c.name for c in LESSON_COLUMNS if c.bulk == IF_SET)
_row_of = _getter(_ROW_COLUMNS)
# What a new lesson's snapshot takes from its NewLesson, besides its text and refs.
_SNAPSHOT_GIVEN = tuple(c.name for c in RECORDED if c.bulk != DEFAULT and c.name != "text")
_snapshot_values = _getter(_SNAPSHOT_GIVEN)
_REF_COLUMNS = ("lesson_id", "path", "start_line", "end_line", "position")
_CHANGE_COLUMNS = ("batch_id", "memory_id", "lesson_id", "action", "after")


def lessons_bulk_create(lessons: Sequence[NewLesson], *, now: datetime | None = None) -> list[int]:
    """Create many lessons (NewLesson) with their refs, derived-from links and one `create` change
    each, as lesson_create would record them, in a few statements whatever their number.

    For the fast paths (an import, a compaction's new lessons). The caller has validated the
    fields, created the batches (so it holds the write lock) and bumps the versions afterwards;
    refs are stored without anchors (refs_link_anchors' bulk pass gives them one later).
    Returns the new lesson ids, in the order given.
    """
    if not lessons:
        return []
    now = now or timezone.now()
    row_of = _row_of
    rows = [(*row_of(new), content_hash(new.text)) for new in lessons]
    given = []
    for name in _IF_SET:
        i = NewLesson._fields.index(name)
        if {new[i] for new in lessons} != {field_default(name)}:
            given.append(name)
            rows = [(*row, new[i]) for row, new in zip(rows, lessons)]
    ids = RowInserter(Lesson, (*_ROW_COLUMNS, "content_hash", *given), now).insert(rows, returning=True)
    refs = [
        (lesson_id, r.path, r.start_line, r.end_line, position)
        for lesson_id, new in zip(ids, lessons)
        if new.refs
        for position, r in enumerate(new.refs)
    ]
    if refs:
        RowInserter(LessonRef, _REF_COLUMNS, now).insert(refs)
    links = [
        Lesson.derived_from.through(from_lesson_id=lesson_id, to_lesson_id=source)
        for lesson_id, new in zip(ids, lessons)
        if new.derived_from
        for source in new.derived_from
    ]
    if links:
        Lesson.derived_from.through.objects.bulk_create(links)
    snapshot, values = new_snapshot_writer(_SNAPSHOT_GIVEN), _snapshot_values
    create = Change.Action.CREATE
    RowInserter(Change, _CHANGE_COLUMNS, now).insert(
        [
            (new.batch_id, new.memory_id, lesson_id, create, snapshot(values(new), new.text, new.refs))
            for lesson_id, new in zip(ids, lessons)
        ]
    )
    return ids


def lessons_bulk_retire(
    *,
    batch: ChangeBatch,
    retired: Iterable[tuple[Lesson, Sequence[Any], int | None]],
    now: datetime | None = None,
) -> None:
    """Lessons leave compiled memory in one batch, as lesson_supersede and lesson_delete record it.

    `retired`: (lesson, its refs, successor id or None), the lessons locked by the caller. With a
    successor the lesson is superseded by it, otherwise deleted (a soft delete: it stays in
    history, revertible). One UPDATE per successor and one INSERT of the history.
    """
    now = now or timezone.now()
    history: list[Change] = []
    by_successor: dict[int | None, list[int]] = {}
    for lesson, refs, successor_id in retired:
        status = LessonStatus.SUPERSEDED if successor_id else LessonStatus.DELETED
        before = lesson_snapshot(lesson, refs)
        lesson.status, lesson.superseded_by_id, lesson.updated_at = status, successor_id, now
        action = Change.Action.SUPERSEDE if successor_id else Change.Action.DELETE
        history.append(
            Change(
                batch=batch,
                memory_id=lesson.memory_id,
                lesson=lesson,
                action=action,
                before=before,
                after={**before, "status": status},
                created_at=now,
            )
        )
        by_successor.setdefault(successor_id, []).append(lesson.pk)
    # One UPDATE per successor: bulk_update's CASE over every row costs more than the writes themselves.
    for successor_id, ids in by_successor.items():
        status = LessonStatus.SUPERSEDED if successor_id else LessonStatus.DELETED
        Lesson.objects.filter(pk__in=ids).update(status=status, superseded_by_id=successor_id, updated_at=now)
    Change.objects.bulk_create(history)


def lesson_refs_set_anchors(pairs: Iterable[tuple[int, int]]) -> None:
    """Point stored refs at their anchors: pairs of (anchor id, ref id). One prepared statement for all
    (Django's bulk_update builds a CASE per row, far slower at 10,000 refs)."""
    update_by_pk(LessonRef, ["anchor_id"], pairs)


def ref_anchors_create(*, anchors: Sequence[RefAnchor]) -> None:
    """Save many new anchors of refs at once (the refs of a bulk import); callers read their ids back."""
    if anchors:
        insert_instances(anchors)


def ref_anchors_update(*, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    """What a check found of many anchors: rows are (value per column…, anchor id).

    Compiled memory shows which refs are stale, so the caller bumps the version of each memory
    whose compiled text this changes (memories_bump_version)."""
    update_by_pk(RefAnchor, columns, rows)
