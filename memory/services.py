"""The write path of lessons, their refs and their history, for callers outside it.

Every write to memory goes through memory/history/, so every write leaves history and bumps the
version; no other module creates or updates Lesson, LessonRef or Change rows, nor writes rows by
raw SQL keyed on a table (tests/test_one_write_path.py checks it). Each reason to change lives in
its own module there; this one only names what the rest of the product uses:
- snapshots.py: the table of a lesson's columns (LESSON_COLUMNS) and lesson_snapshot;
- validation.py: clean_refs, validate_lesson_fields and the caps on a lesson's text and a reason;
- batches.py: Actor, batches, and the memory's version (memory_bump_version clears its caches);
- lessons.py: one lesson at a time (lesson_create, lesson_update, …, lessons_append_or_confirm);
- bulk.py: many at once (lessons_bulk_create, lessons_bulk_retire, the refs check's anchor writes);
- revert.py: change_revert, batch_revert and what ties changes together.
"""

from django.core.exceptions import PermissionDenied

from memory.history.batches import (
    Actor,
    batch_build,
    batch_create,
    batches_create,
    memories_bump_version,
    memory_bump_version,
    memory_get_or_create,
)
from memory.history.bulk import (
    NewLesson,
    lesson_refs_set_anchors,
    lessons_bulk_create,
    lessons_bulk_retire,
    ref_anchors_create,
    ref_anchors_update,
)
from memory.history.lessons import (
    LessonDraft,
    lesson_add_sources,
    lesson_confirm,
    lesson_create,
    lesson_create_from_file,
    lesson_delete,
    lesson_promote,
    lesson_restore,
    lesson_set_expiry,
    lesson_set_protected,
    lesson_supersede,
    lesson_update,
    lessons_append_or_confirm,
    lessons_forget_successor,
    lessons_point_at_successor,
    next_section,
)
from memory.history.revert import (
    APPROVER_BATCH_KINDS,
    RevertError,
    batch_decided_by_approver,
    batch_revert,
    batch_revertible,
    change_revert,
    dependent_changes,
)
from memory.history.snapshots import LESSON_COLUMNS, LessonColumn, lesson_snapshot
from memory.history.validation import MAX_LESSON_CHARS, REASON_MAX_CHARS, clean_refs, validate_lesson_fields
from memory.models import Change, ChangeBatch  # reached through here by older callers

__all__ = [
    "APPROVER_BATCH_KINDS",
    "LESSON_COLUMNS",
    "MAX_LESSON_CHARS",
    "REASON_MAX_CHARS",
    "Actor",
    "Change",
    "ChangeBatch",
    "LessonColumn",
    "LessonDraft",
    "NewLesson",
    "PermissionDenied",
    "RevertError",
    "batch_build",
    "batch_create",
    "batch_decided_by_approver",
    "batch_revert",
    "batch_revertible",
    "batches_create",
    "change_revert",
    "clean_refs",
    "dependent_changes",
    "lesson_add_sources",
    "lesson_confirm",
    "lesson_create",
    "lesson_create_from_file",
    "lesson_delete",
    "lesson_promote",
    "lesson_refs_set_anchors",
    "lesson_restore",
    "lesson_set_expiry",
    "lesson_set_protected",
    "lesson_snapshot",
    "lesson_supersede",
    "lesson_update",
    "lessons_append_or_confirm",
    "lessons_bulk_create",
    "lessons_bulk_retire",
    "lessons_forget_successor",
    "lessons_point_at_successor",
    "memories_bump_version",
    "memory_bump_version",
    "memory_get_or_create",
    "next_section",
    "ref_anchors_create",
    "ref_anchors_update",
    "validate_lesson_fields",
]
