"""Conflicts found, kept and decided on a memory in the database; what agents read meanwhile."""

from datetime import date

import pytest
import time_machine
from django.core.management import call_command

from memory import services
from memory.conflicts import CONFLICT_MARK
from memory.conflicts.services import conflict_keep_both, conflict_keep_newer, conflict_keep_older, conflicts_detect
from memory.formats.exporter import render_memory_files
from memory.models import ExpiryProposal, Lesson, LessonConflict, LessonStatus
from memory.selectors import compile_memory
from tests.factories import make_lesson

ACTOR = services.Actor.system("test")


@pytest.fixture
def pair(memory):
    older = make_lesson(memory, "Install frontend dependencies with npm install in web/.", day=date(2026, 1, 10))
    newer = make_lesson(memory, "Install frontend dependencies with pnpm install in web/.", day=date(2026, 3, 2))
    return older, newer


def test_a_newer_lesson_with_another_tool_supersedes_the_older(memory, pair):
    older, newer = pair
    assert conflicts_detect(memory=memory, lesson_ids=[newer.pk]) == (1, 0)
    conflict = LessonConflict.objects.get()
    assert (conflict.older, conflict.newer, conflict.relation, conflict.status) == (
        older,
        newer,
        "supersedes",
        "pending",
    )
    assert "npm" in conflict.evidence and "pnpm" in conflict.evidence


def test_lessons_that_agree_are_left_alone(memory):
    make_lesson(memory, "Upload timeout is 30 s for the image service.")
    make_lesson(memory, "Download timeout is 30 s for the image service.")
    assert conflicts_detect(memory=memory) == (0, 0)


def test_pending_conflict_marks_the_older_line_only(memory, pair):
    conflicts_detect(memory=memory)
    memory.refresh_from_db()
    text = compile_memory(memory).text
    assert f"npm install in web/. {CONFLICT_MARK}" in text
    assert text.count(CONFLICT_MARK) == 1


def test_keep_newer_retires_the_older_as_superseded_and_revert_brings_it_back(memory, pair):
    older, newer = pair
    conflicts_detect(memory=memory)
    conflict = conflict_keep_newer(conflict=LessonConflict.objects.get(), actor=ACTOR)
    older.refresh_from_db()
    assert (older.status, older.superseded_by_id) == (LessonStatus.SUPERSEDED, newer.pk)
    assert conflict.status == "resolved" and conflict.decision == "keep_newer"
    memory.refresh_from_db()
    text = compile_memory(memory).text
    assert "with npm install" not in text and "pnpm install" in text and CONFLICT_MARK not in text
    services.batch_revert(batch=conflict.batch, actor=ACTOR)
    older.refresh_from_db()
    assert older.status == LessonStatus.ACTIVE
    assert LessonConflict.objects.get().status == "pending"


def test_keep_older_deletes_the_newer(memory, pair):
    _older, newer = pair
    conflicts_detect(memory=memory)
    conflict_keep_older(conflict=LessonConflict.objects.get(), actor=ACTOR)
    newer.refresh_from_db()
    assert newer.status == LessonStatus.DELETED


def test_a_pair_kept_as_compatible_is_never_proposed_again(memory, pair):
    conflicts_detect(memory=memory)
    conflict_keep_both(conflict=LessonConflict.objects.get(), actor=ACTOR)
    memory.refresh_from_db()
    assert CONFLICT_MARK not in compile_memory(memory).text
    # The same two texts again, under new ids (a re-import): still not proposed.
    make_lesson(memory, "Install frontend dependencies with pnpm install in web/.", day=date(2026, 4, 1))
    assert conflicts_detect(memory=memory)[0] == 0
    assert LessonConflict.objects.get().status == "dismissed"


def test_new_working_lessons_are_checked_after_commit(memory, django_capture_on_commit_callbacks, settings):
    settings.CELERY_TASK_ALWAYS_EAGER = True
    make_lesson(memory, "Run the unit tests of the web app with jest.", day=date(2026, 1, 1))
    with django_capture_on_commit_callbacks(execute=True):
        services.lessons_append_or_confirm(
            memory=memory,
            drafts=[
                services.LessonDraft(category="OBSERVATION", text="Run the unit tests of the web app with vitest.")
            ],
            actor=ACTOR,
            kind="agent",
            label="test",
            reason="",
        )
    assert LessonConflict.objects.filter(memory=memory).count() == 1


def test_expiry_is_proposed_from_the_text(memory):
    lesson = make_lesson(memory, "Pin urllib3 below 2 and remove the pin after upstream fixes #1234.")
    make_lesson(memory, "Wait until the build finishes before tagging the release.")
    assert conflicts_detect(memory=memory) == (0, 1)
    proposal = ExpiryProposal.objects.get()
    assert proposal.lesson == lesson and "upstream fixes #1234" in proposal.expires_when


def test_an_expired_lesson_is_never_compiled_nor_exported(memory):
    lesson = make_lesson(memory, "Read-only mode for the admin until 2026-02-01.")
    make_lesson(memory, "The admin lives at /admin/.")
    # Set as accepting a proposal will; the field is the lesson's own.
    Lesson.objects.filter(pk=lesson.pk).update(expires_on=date(2026, 2, 1))
    memory.refresh_from_db()
    with time_machine.travel(date(2026, 1, 31)):
        assert "Read-only mode" in compile_memory(memory).text
        assert "Read-only mode" in render_memory_files(memory)["working.md"][0]
    with time_machine.travel(date(2026, 2, 1)):
        compiled = compile_memory(memory)
        assert "Read-only mode" not in compiled.text and "/admin/" in compiled.text
        assert lesson.pk not in compiled.working_cut
        assert "Read-only mode" not in render_memory_files(memory)["working.md"][0]


def test_detect_conflicts_command_runs_on_imported_memories(db, tmp_path, capsys):
    folder = tmp_path / "Ada" / "memories" / "shop"
    folder.mkdir(parents=True)
    (folder / "core.md").write_text("")
    (folder / "working.md").write_text(
        "## 2026-01-05 [OBSERVATION]\n- [OBSERVATION] Upload retries are capped at 3 attempts.\n\n"
        "## 2026-02-14 [OBSERVATION]\n- [OBSERVATION] Upload retries are now capped at 5 attempts.\n"
    )
    call_command("import_memory", str(tmp_path))
    call_command("detect_conflicts", "--persona", "Ada")
    conflict = LessonConflict.objects.get()
    assert "3" in conflict.older.text and "5" in conflict.newer.text and conflict.relation == "supersedes"
    assert "1 new conflicts" in capsys.readouterr().out
