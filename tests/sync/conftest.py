import os
from pathlib import Path

import pytest

from memory.formats.nightwatch import WORKING_FILE
from memory.models import Memory
from memory.sync.engine import sync_pass


def nw_append(path, text):
    """What Night Watch's appendReflection does: open with O_APPEND, write the section, close."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, text.encode("utf-8"))
    finally:
        os.close(fd)


def section(day, *bullets, category="OBSERVATION"):
    """A dated section as appendReflection writes it: `## <day> [CAT]`, `- <lesson>` bullets, a blank line."""
    return f"## {day} [{category}]\n" + "".join(f"- {b}\n" for b in bullets) + "\n"


def nw_rewrite(path, text):
    """What Night Watch's compaction and promotion do: writeFile over the same inode (O_TRUNC)."""
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)


def get_memory(folder):
    """Night Watch's MemoryService.getMemory within budget, for one memory folder."""
    folder = Path(folder)
    core = (folder / "core.md").read_text() if (folder / "core.md").exists() else ""
    working = (folder / "working.md").read_text() if (folder / "working.md").exists() else ""
    return f"## Core Lessons\n{core}\n## Working Memory\n{working}"


def memory_of(persona, project="api"):
    return Memory.objects.select_related("persona", "project").get(persona__name=persona, project__slug=project)


@pytest.fixture
def root(tmp_path):
    return tmp_path / "agents"


@pytest.fixture
def sync(root):
    def run(expect_errors=False):
        report = sync_pass(root)
        if not expect_errors:
            assert not report.failed, [(f.folder, f.error) for f in report.failed]
        return report

    return run


@pytest.fixture
def working(root):
    return lambda persona="Dev", project="api": root / persona / "memories" / project / WORKING_FILE


@pytest.fixture
def run_command():
    from io import StringIO

    from django.core.management import call_command

    def run(*args):
        out = StringIO()
        call_command(*args, stdout=out, stderr=StringIO())
        return out.getvalue()

    return run


@pytest.fixture
def conflict(root, sync, working, admin_user):
    """A waiting conflict: a person edited a lesson whose line Night Watch then rewrote."""
    from memory import services
    from memory.models import Lesson
    from memory.sync.models import SyncConflict

    nw_append(working(), section("2026-03-01", "[OBSERVATION] The retry loop uses a fixed delay"))
    sync()
    lesson = Lesson.objects.get(text="The retry loop uses a fixed delay")
    services.lesson_update(
        lesson=lesson, actor=services.Actor.for_user(admin_user), text="The retry loop uses a fixed 2 s delay"
    )
    nw_rewrite(working(), working().read_text().replace("uses a fixed delay", "has <b>no</b> backoff"))
    sync()
    return SyncConflict.objects.get()
