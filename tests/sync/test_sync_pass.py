"""One pass of sync_memory over real files: what Night Watch wrote comes in, what people decided goes out."""

import os
from datetime import date

import pytest
import time_machine

from memory import services
from memory.access import EVERY_MEMORY
from memory.models import Change, ChangeBatch, Lesson
from memory.review_queue import pending_review_counts
from memory.selectors import compile_memory
from memory.sync import changes, engine
from memory.sync.models import SyncConflict, SyncedFolder
from memory.sync.services import sync_conflict_resolve
from tests.sync.conftest import get_memory, memory_of, nw_append, nw_rewrite, section

pytestmark = pytest.mark.django_db

FIRST = "[OBSERVATION] The retry loop uses a fixed delay (ref: src/queue/worker.ts#L88)"
SECOND = "[TODO] Add jittered backoff to the retry loop"


def _lesson(memory, text):
    return Lesson.objects.get(memory=memory, text=text)


def _rows():
    return Lesson.objects.count(), Change.objects.count(), ChangeBatch.objects.count()


def _tree(root):
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_an_agent_append_and_a_lead_edit_of_another_lesson_both_reach_the_file(root, sync, working, admin_user):
    nw_append(working(), section("2026-03-01", FIRST))
    sync()
    memory = memory_of("Dev")
    nw_append(working(), section("2026-03-02", SECOND, category="TODO"))
    services.lesson_update(
        lesson=_lesson(memory, "The retry loop uses a fixed delay"),
        actor=services.Actor.for_user(admin_user),
        text="The retry loop sleeps a fixed 2 s",
    )
    report = sync()

    text = working().read_text()
    assert "- [OBSERVATION] The retry loop sleeps a fixed 2 s (ref: src/queue/worker.ts#L88)" in text
    assert "- [TODO] Add jittered backoff to the retry loop" in text
    assert "fixed delay" not in text
    assert _lesson(memory, "Add jittered backoff to the retry loop").status == "active"
    (result,) = report.folders
    assert (result.taken_in, result.written) == (1, ["working.md"])


def test_a_second_pass_with_nothing_new_changes_no_byte_and_adds_no_row(root, sync, working, admin_user, monkeypatch):
    nw_append(working(), section("2026-03-01", FIRST))
    nw_append(working("Maya"), section("2026-03-01", SECOND, category="TODO"))
    sync()
    services.lesson_delete(
        lesson=Lesson.objects.get(text=SECOND.split("] ")[1]), actor=services.Actor.for_user(admin_user)
    )
    sync()
    before, rows = _tree(root), _rows()

    def no_parse(*args, **kwargs):
        raise AssertionError("an unchanged folder was parsed")

    monkeypatch.setattr(changes, "parse_file", no_parse)
    report = sync()
    assert all(f.skipped for f in report.folders)
    assert _tree(root) == before and _rows() == rows


def test_after_a_pass_night_watch_reads_exactly_the_compiled_memory(root, sync, working, admin_user):
    nw_append(working(), "- [PATTERN] An undated line before any section\n\n")
    nw_append(working(), section("2026-03-01", FIRST, "an untagged bullet"))
    core = working().with_name("core.md")
    nw_append(
        core, "- [PATTERN] [PATTERN] Idempotency keys guard every charge (ref: a.ts#L3-L3) (promoted 2026-02-10)\n"
    )
    nw_append(working("Maya", "docs.site"), section("2026-03-02", SECOND, category="TODO"))
    sync()
    memory = memory_of("Dev")
    services.lesson_create(
        memory=memory, text="Made in the dashboard", category="DECISION", actor=services.Actor.for_user(admin_user)
    )
    sync()
    for synced in SyncedFolder.objects.select_related("memory"):
        assert get_memory(root / synced.folder).rstrip() == compile_memory(synced.memory).text.rstrip()


def test_night_watch_rewriting_its_file_is_a_revertible_batch_of_its_own(root, sync, working, admin_user):
    nw_append(working(), section("2026-03-01", FIRST, "[OBSERVATION] Webhooks arrive twice"))
    nw_append(working(), section("2026-03-02", "[OBSERVATION] The test clock drifts"))
    sync()
    memory = memory_of("Dev")
    # Night Watch's compaction: the file rewritten in place, two lines folded into one, one kept.
    nw_rewrite(
        working(),
        "- [OBSERVATION] Retries are fixed and webhooks arrive twice\n- [OBSERVATION] The test clock drifts\n",
    )
    sync()

    batch = ChangeBatch.objects.get(kind=ChangeBatch.Kind.SYNC)
    assert batch.actor_display == "Night Watch files"
    assert sorted(batch.changes.values_list("action", flat=True)) == ["create", "delete", "delete"]
    active = set(Lesson.objects.filter(memory=memory, status="active").values_list("text", flat=True))
    assert active == {"Retries are fixed and webhooks arrive twice", "The test clock drifts"}

    services.batch_revert(batch=batch, actor=services.Actor.for_user(admin_user))
    sync()
    text = working().read_text()
    assert "fixed delay" in text and "Webhooks arrive twice" in text and "Retries are fixed" not in text


def test_a_line_a_person_changed_and_night_watch_rewrote_waits_for_a_person(root, sync, working, admin_user):
    nw_append(working(), section("2026-03-01", FIRST, "[OBSERVATION] Webhooks arrive twice"))
    sync()
    memory = memory_of("Dev")
    person = services.Actor.for_user(admin_user)
    services.lesson_update(
        lesson=_lesson(memory, "The retry loop uses a fixed delay"),
        actor=person,
        text="The retry loop uses a fixed 2 s delay",
    )
    nw_rewrite(working(), working().read_text().replace("uses a fixed delay", "has no backoff at all"))
    report = sync()

    conflict = SyncConflict.objects.get()
    assert report.folders[0].conflicts == 1 and report.folders[0].waiting == 1
    assert "has no backoff at all" in conflict.file_line
    assert "uses a fixed delay" in conflict.base_line
    lesson = _lesson(memory, "The retry loop uses a fixed 2 s delay")
    assert lesson.status == "active"  # the person's text is not written over
    assert "has no backoff at all" in working().read_text()  # nor is Night Watch's
    assert "fixed 2 s" not in working().read_text()
    assert pending_review_counts(EVERY_MEMORY) == {memory.pk: 1}
    before = _tree(root)
    sync()
    assert _tree(root) == before and SyncConflict.objects.count() == 1

    sync_conflict_resolve(conflict=conflict, choice="file", actor=person)
    sync()
    lesson.refresh_from_db()
    assert lesson.text == "The retry loop has no backoff at all"
    assert "has no backoff at all" in working().read_text()
    assert pending_review_counts(EVERY_MEMORY) == {}
    assert get_memory(working().parent).rstrip() == compile_memory(memory).text.rstrip()


@pytest.mark.parametrize(
    "choice, expected",
    [
        ("dashboard", {"The retry loop uses a fixed 2 s delay"}),
        ("both", {"The retry loop uses a fixed 2 s delay", "The retry loop has no backoff at all"}),
    ],
)
def test_a_conflict_settled_for_the_dashboard_or_both(root, sync, working, admin_user, choice, expected):
    nw_append(working(), section("2026-03-01", FIRST))
    sync()
    memory = memory_of("Dev")
    person = services.Actor.for_user(admin_user)
    services.lesson_update(
        lesson=_lesson(memory, "The retry loop uses a fixed delay"),
        actor=person,
        text="The retry loop uses a fixed 2 s delay",
    )
    nw_rewrite(working(), working().read_text().replace("uses a fixed delay", "has no backoff at all"))
    sync()
    sync_conflict_resolve(conflict=SyncConflict.objects.get(), choice=choice, actor=person)
    sync()
    assert set(Lesson.objects.filter(memory=memory, status="active").values_list("text", flat=True)) == expected
    assert get_memory(working().parent).rstrip() == compile_memory(memory).text.rstrip()
    for text in expected:
        assert text in working().read_text()


def test_a_person_deleting_what_night_watch_rewrote_is_a_conflict_and_both_removing_is_not(
    root, sync, working, admin_user
):
    nw_append(working(), section("2026-03-01", FIRST, "[OBSERVATION] Webhooks arrive twice"))
    sync()
    memory = memory_of("Dev")
    person = services.Actor.for_user(admin_user)
    services.lesson_delete(lesson=_lesson(memory, "The retry loop uses a fixed delay"), actor=person)
    services.lesson_delete(lesson=_lesson(memory, "Webhooks arrive twice"), actor=person)
    nw_rewrite(working(), section("2026-03-01", "[OBSERVATION] The retry loop has no backoff"))
    sync()
    conflict = SyncConflict.objects.get()
    assert conflict.lesson.text == "The retry loop uses a fixed delay"
    assert "no backoff" in conflict.file_line
    assert "Webhooks" not in working().read_text()


def test_lines_matching_a_deleted_lesson_do_not_come_back(root, sync, working, admin_user):
    nw_append(working(), section("2026-03-01", FIRST))
    sync()
    memory = memory_of("Dev")
    services.lesson_delete(
        lesson=_lesson(memory, "The retry loop uses a fixed delay"), actor=services.Actor.for_user(admin_user)
    )
    nw_append(working(), section("2026-03-01", FIRST))  # the agent says it again, same day
    sync()
    assert Lesson.objects.filter(memory=memory, status="active").count() == 0
    assert "fixed delay" not in working().read_text()


def test_a_line_night_watch_wrote_twice_is_two_lessons(root, sync, working):
    nw_append(working(), section("2026-03-01", FIRST))
    sync()
    nw_append(working(), section("2026-03-01", FIRST))
    sync()
    assert working().read_text().count("fixed delay") == 2
    assert Lesson.objects.filter(status="active").count() == 2


def test_an_append_between_the_read_and_the_replace_is_not_overwritten(root, sync, working, admin_user, monkeypatch):
    nw_append(working(), section("2026-03-01", FIRST))
    sync()
    memory = memory_of("Dev")
    services.lesson_create(
        memory=memory, text="From the dashboard", category="DECISION", actor=services.Actor.for_user(admin_user)
    )
    real_write, raced = engine._write, []

    def append_first(read, data, folder):
        if not raced:
            raced.append(1)
            nw_append(read.path, section("2026-03-02", SECOND, category="TODO"))
        return real_write(read, data, folder)

    monkeypatch.setattr(engine, "_write", append_first)
    sync()
    text = working().read_text()
    assert "Add jittered backoff" in text and "From the dashboard" in text
    assert Lesson.objects.filter(memory=memory, status="active").count() == 3


def test_an_append_to_the_old_inode_right_after_the_replace_is_taken_in(root, sync, working, admin_user, monkeypatch):
    nw_append(working(), section("2026-03-01", FIRST))
    sync()
    memory = memory_of("Dev")
    services.lesson_create(
        memory=memory, text="From the dashboard", category="DECISION", actor=services.Actor.for_user(admin_user)
    )
    real_replace, late = os.replace, []

    def replace_then_late_append(src, dst):
        # An O_APPEND writer opened the file before the replace and writes after it: to the old inode.
        fd = os.open(dst, os.O_WRONLY | os.O_APPEND) if str(dst).endswith("working.md") and not late else None
        real_replace(src, dst)
        if fd is not None:
            late.append(1)
            os.write(fd, section("2026-03-02", SECOND, category="TODO").encode())
            os.close(fd)

    monkeypatch.setattr(os, "replace", replace_then_late_append)
    sync()
    assert late
    text = working().read_text()
    assert "Add jittered backoff" in text and "From the dashboard" in text
    assert _lesson(memory, "Add jittered backoff to the retry loop").status == "active"
    monkeypatch.setattr(os, "replace", real_replace)
    before = _tree(root)
    sync()
    assert _tree(root) == before


def test_a_folder_that_cannot_be_synced_fails_alone_and_the_command_exits_non_zero(
    root, working, settings, run_command
):
    from django.core.management.base import CommandError

    settings.LESSON_MAX_CHARS = 200
    nw_append(working(), section("2026-03-01", FIRST))
    nw_append(working("Maya"), section("2026-03-01", "x" * 5000))
    with pytest.raises(CommandError, match="1 folder"):
        run_command("sync_memory", str(root))
    assert memory_of("Dev").lessons.count() == 1
    assert not memory_of("Dev").persona.memories.filter(project__slug="nope").exists()


def test_the_command_prints_what_each_memory_took_in_wrote_and_left_for_review(root, working, run_command):
    nw_append(working(), section("2026-03-01", FIRST))
    out = run_command("sync_memory", str(root))
    assert "Dev / api: took in 1" in out and "0 waiting for review" in out
    nw_append(working(), section("2026-03-02", SECOND, category="TODO"))
    out = run_command("sync_memory", str(root))
    assert "Dev / api: took in 1" in out
    out = run_command("sync_memory", str(root))
    assert "(unchanged)" in out and "1 folder(s) synced, 0 failed" in out


def test_a_file_that_disappeared_is_written_again_and_no_lesson_is_deleted(root, sync, working):
    nw_append(working(), section("2026-03-01", FIRST))
    sync()
    before = working().read_bytes()
    working().unlink()
    sync()
    assert working().read_bytes() == before
    assert Lesson.objects.get().status == "active" and not ChangeBatch.objects.filter(kind="sync").exists()


def test_a_first_pass_syncs_each_folder_with_the_memory_its_lines_went_to(root, sync, working):
    # Archived personas' folders are imported after the active ones, and an archived "Dev" is kept
    # apart from the active "Dev": each folder must still be synced with its own memory.
    archived = root / ".archived" / "Dev-1700000000000" / "memories" / "api" / "working.md"
    nw_append(archived, section("2026-03-01", "[DECISION] Keep the old queue"))
    nw_append(working("Dev"), section("2026-03-01", FIRST))
    nw_append(working("Ann"), section("2026-03-01", SECOND, category="TODO"))
    report = sync()

    memories = {s.folder: s.memory for s in SyncedFolder.objects.select_related("memory__persona")}
    texts = {
        ".archived/Dev-1700000000000/memories/api": "Keep the old queue",
        "Ann/memories/api": "Add jittered backoff to the retry loop",
        "Dev/memories/api": "The retry loop uses a fixed delay",
    }
    assert sorted(memories) == sorted(texts)
    for folder, text in texts.items():
        assert list(memories[folder].lessons.values_list("text", flat=True)) == [text]
    assert memories[".archived/Dev-1700000000000/memories/api"].persona.archived_at is not None
    assert memories["Dev/memories/api"].persona.archived_at is None
    assert {f.folder: f.taken_in for f in report.folders} == dict.fromkeys(texts, 1)
    before = _tree(root)
    sync()
    assert _tree(root) == before


def test_a_conflict_on_a_core_lesson_shows_the_line_core_md_held_before(root, sync, working, admin_user):
    core = working().with_name("core.md")
    nw_append(core, "- [PATTERN] Idempotency keys guard every charge (promoted 2026-02-10)\n")
    sync()
    services.lesson_update(
        lesson=Lesson.objects.get(text="Idempotency keys guard every charge"),
        actor=services.Actor.for_user(admin_user),
        text="Idempotency keys guard every charge and refund",
    )
    nw_rewrite(core, "- [PATTERN] Idempotency keys guard charges (promoted 2026-02-10)\n")
    sync()

    conflict = SyncConflict.objects.get()
    assert conflict.base_line == "- [PATTERN] Idempotency keys guard every charge (promoted 2026-02-10)"
    assert conflict.file_line == "- [PATTERN] Idempotency keys guard charges (promoted 2026-02-10)"


def test_a_lesson_leaves_the_files_on_its_expiry_day_with_no_other_change(root, sync, working, monkeypatch):
    nw_append(working(), section("2026-03-01", FIRST, "Skip the e2e suite for the migration week"))
    with time_machine.travel(date(2026, 3, 2)):
        sync()
        lesson = Lesson.objects.get(text="Skip the e2e suite for the migration week")
        services.lesson_set_expiry(lesson=lesson, expires_on=date(2026, 3, 9), actor=services.Actor.system("tests"))
        sync()
        assert "migration week" in working().read_text()
    with time_machine.travel(date(2026, 3, 8)):
        assert all(f.skipped for f in sync().folders)  # the day before: nothing to do
    with time_machine.travel(date(2026, 3, 9)):
        report = sync()
        assert not any(f.skipped for f in report.folders)
        assert "migration week" not in working().read_text()
        assert "fixed delay" in working().read_text()
        memory = memory_of("Dev")
        assert get_memory(working().parent).rstrip() == compile_memory(memory).text.rstrip()
        lesson.refresh_from_db()
        assert lesson.status == "active"  # out of the files, not deleted: a person decides

        def no_parse(*args, **kwargs):
            raise AssertionError("an unchanged folder was parsed")

        monkeypatch.setattr(changes, "parse_file", no_parse)
        assert all(f.skipped for f in sync().folders)  # written once that day, then left alone
