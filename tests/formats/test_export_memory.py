"""python manage.py export_memory ROOT: the exact format, atomic writes, backups."""

import os
from datetime import UTC, date, datetime
from pathlib import Path

import pytest
from django.core.management.base import CommandError

from memory.formats import exporter
from memory.services import Actor, lesson_delete
from tests.factories import MemoryFactory, PersonaFactory, ProjectFactory, make_lesson
from tests.formats.conftest import tree_bytes

pytestmark = pytest.mark.django_db


@pytest.fixture
def maya_memory():
    memory = MemoryFactory(persona=PersonaFactory(name="Maya Lopez"), project=ProjectFactory(slug="night-watch-cli"))
    make_lesson(
        memory,
        "Refresh tokens skip expiry",
        category="PATTERN",
        tier="core",
        refs="src/auth.ts#L23-L30",
        day=date(2025, 2, 10),
    )
    make_lesson(
        memory,
        "Retry uses a fixed delay",
        refs="src/queue/worker.ts#L88-L95, src/queue/retry.ts#L4",
        day=date(2025, 1, 31),
        section=1,
    )
    make_lesson(memory, "Add backoff", category="TODO", day=date(2025, 1, 31), section=1)
    make_lesson(memory, "Duplicate jobs", category="HYPOTHESIS", day=date(2025, 2, 3), section=2)
    return memory


def test_writes_exactly_the_night_watch_format(maya_memory, tmp_path, run_command):
    out = run_command("export_memory", str(tmp_path))
    folder = tmp_path / "Maya Lopez/memories/night-watch-cli"
    assert (folder / "core.md").read_text(encoding="utf-8") == (
        "- [PATTERN] Refresh tokens skip expiry (ref: src/auth.ts#L23-L30) (promoted 2025-02-10)\n"
    )
    assert (folder / "working.md").read_text(encoding="utf-8") == (
        "## 2025-01-31 [OBSERVATION]\n"
        "- [OBSERVATION] Retry uses a fixed delay (ref: src/queue/worker.ts#L88-L95, src/queue/retry.ts#L4)\n"
        "- [TODO] Add backoff\n"
        "\n"
        "## 2025-02-03 [HYPOTHESIS]\n"
        "- [HYPOTHESIS] Duplicate jobs\n"
        "\n"
    )
    assert "2 written, 0 replaced, 0 unchanged" in out


def test_only_active_lessons(maya_memory, tmp_path, run_command):
    lesson_delete(lesson=maya_memory.lessons.get(category="TODO"), actor=Actor.system("tests"))
    run_command("export_memory", str(tmp_path))
    assert "Add backoff" not in (tmp_path / "Maya Lopez/memories/night-watch-cli/working.md").read_text()


def test_archived_personas_go_under_dot_archived(tmp_path, run_command):
    persona = PersonaFactory(name="Old Carlos", archived_at=datetime(2023, 11, 14, 22, 13, 20, tzinfo=UTC))
    make_lesson(MemoryFactory(persona=persona, project=ProjectFactory(slug="app")), "kept", day=date(2024, 1, 1))
    run_command("export_memory", str(tmp_path))
    path = tmp_path / ".archived/Old Carlos-1700000000000/memories/app/working.md"
    assert path.read_text() == "## 2024-01-01 [OBSERVATION]\n- [OBSERVATION] kept\n\n"
    assert not (tmp_path / "Old Carlos").exists()


def test_persona_and_project_filters(maya_memory, tmp_path, run_command):
    other = MemoryFactory(persona=PersonaFactory(name="Priya"), project=maya_memory.project)
    make_lesson(other, "priya lesson")
    make_lesson(MemoryFactory(persona=maya_memory.persona, project=ProjectFactory(slug="other")), "elsewhere")
    run_command("export_memory", str(tmp_path), "--persona", "maya lopez", "--project", "night-watch-cli")
    assert sorted(tree_bytes(tmp_path)) == [
        "Maya Lopez/memories/night-watch-cli/core.md",
        "Maya Lopez/memories/night-watch-cli/working.md",
    ]


def test_unknown_filter_is_a_clear_error(maya_memory, tmp_path, run_command):
    with pytest.raises(CommandError, match="no memory to export for persona 'Nobody'"):
        run_command("export_memory", str(tmp_path / "out"), "--persona", "Nobody")
    assert not (tmp_path / "out").exists()


def test_replacing_keeps_a_backup_and_unchanged_files_are_left_alone(maya_memory, tmp_path, run_command):
    run_command("export_memory", str(tmp_path))
    working = tmp_path / "Maya Lopez/memories/night-watch-cli/working.md"
    original = working.read_bytes()
    out = run_command("export_memory", str(tmp_path))
    assert "0 written, 0 replaced, 2 unchanged" in out
    assert not list(working.parent.glob("*.bak-*"))
    make_lesson(maya_memory, "A new observation", day=date(2025, 3, 1))
    out = run_command("export_memory", str(tmp_path))
    assert "1 replaced" in out and "previous kept as working.md.bak-" in out
    (backup,) = working.parent.glob("working.md.bak-*")
    assert backup.read_bytes() == original
    assert "A new observation" in working.read_text()
    assert sorted(p.name for p in working.parent.iterdir() if p.name.startswith(".")) == []  # no temp files left


def test_backup_names_never_collide(tmp_path):
    target = tmp_path / "core.md"
    target.write_text("one\n")
    exporter.write_atomic(target, b"two\n", stamp="20250101T000000Z")
    exporter.write_atomic(target, b"three\n", stamp="20250101T000000Z")
    assert (tmp_path / "core.md.bak-20250101T000000Z").read_text() == "one\n"
    assert (tmp_path / "core.md.bak-20250101T000000Z-1").read_text() == "two\n"
    assert target.read_text() == "three\n"


def test_interrupted_write_leaves_the_old_file_whole(tmp_path, monkeypatch):
    target = tmp_path / "working.md"
    target.write_text("old content\n")

    def crash(src, dst):
        raise KeyboardInterrupt  # the process dies between writing the new file and swapping it in

    monkeypatch.setattr(exporter.os, "replace", crash)
    with pytest.raises(KeyboardInterrupt):
        exporter.write_atomic(target, b"new content\n", stamp="s")
    assert target.read_text() == "old content\n"
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


@pytest.mark.parametrize("bad_name", ["a/b", "../../../x", "/abs", ".", "..", ".hidden", "back\\slash", "tab\there"])
def test_a_name_that_cannot_be_a_folder_is_reported_and_the_rest_is_exported(
    maya_memory, tmp_path, run_command, bad_name
):
    # Names are validated where personas are made; this is data from before that rule.
    make_lesson(MemoryFactory(persona=PersonaFactory(name=bad_name), project=maya_memory.project), "x")
    with pytest.raises(CommandError, match=r"1 memory\(ies\) could not be exported"):
        run_command("export_memory", str(tmp_path / "out"))
    assert (tmp_path / "out/Maya Lopez/memories/night-watch-cli/core.md").exists()
    written = {p.relative_to(tmp_path / "out").parts[0] for p in (tmp_path / "out").rglob("*.md")}
    assert written == {"Maya Lopez"}
    assert not (tmp_path / "x").exists() and not Path("/abs").exists()


def test_the_skipped_name_is_named_in_the_report(maya_memory, tmp_path):
    make_lesson(MemoryFactory(persona=PersonaFactory(name="a/b"), project=maya_memory.project), "x")
    report = exporter.export_tree(root=tmp_path / "out")
    assert len(report.skipped) == 1
    assert "'a/b'" in report.skipped[0] and "cannot be a folder name" in report.skipped[0]
    assert report.count("written") == 2


def test_root_that_is_a_file_is_refused(maya_memory, tmp_path, run_command):
    path = tmp_path / "f"
    path.write_text("x")
    with pytest.raises(CommandError, match="is not a folder"):
        run_command("export_memory", str(path))


def test_unparsed_lines_are_written_back_verbatim(tmp_path, run_command):
    from tests.formats.conftest import write_tree

    src = write_tree(
        tmp_path / "src", {"A/memories/app/working.md": "## 2025-01-01 [TODO]\n- [TODO] ok\n  odd line ✓\n"}
    )
    run_command("import_memory", str(src))
    run_command("export_memory", str(tmp_path / "out"))
    assert (
        tmp_path / "out/A/memories/app/working.md"
    ).read_text() == "## 2025-01-01 [TODO]\n- [TODO] ok\n  odd line ✓\n\n"
    assert os.path.getsize(tmp_path / "out/A/memories/app/core.md") == 0
