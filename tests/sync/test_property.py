"""Any interleaving of Night Watch appends and rewrites, dashboard edits and deletions, and passes
(with appends landing in the middle of a pass's replace): no line is lost and every conflict waits
in the review queue."""

import os
import tempfile
from pathlib import Path

import pytest
from django.db import transaction
from hypothesis import HealthCheck, event, given, note, settings
from hypothesis import strategies as st

from memory import services
from memory.access import EVERY_MEMORY
from memory.models import Lesson
from memory.review_queue import counts_by_source
from memory.selectors import compile_memory
from memory.sync import engine
from memory.sync.models import SyncConflict
from tests.conftest import examples
from tests.sync.conftest import get_memory, nw_append, nw_rewrite, section

pytestmark = pytest.mark.django_db


def get_memory_of_nothing():
    return "## Core Lessons\n\n## Working Memory\n"


op = st.one_of(
    st.tuples(st.just("append"), st.integers(1, 3)),  # Night Watch appends a section of n lines
    st.tuples(st.just("rewrite_drop"), st.integers(0, 50)),  # Night Watch removes the k-th bullet
    st.tuples(st.just("rewrite_change"), st.integers(0, 50)),  # Night Watch rewrites the k-th bullet
    st.tuples(st.just("edit"), st.integers(0, 50)),  # a person edits the k-th active lesson
    st.tuples(st.just("delete"), st.integers(0, 50)),  # a person deletes the k-th active lesson
    st.tuples(st.just("pass"), st.sampled_from(["plain", "append_before_replace", "append_after_replace"])),
)


class World:
    def __init__(self, root, user):
        self.root = Path(root)
        self.file = self.root / "Dev" / "memories" / "api" / "working.md"
        self.person = services.Actor.for_user(user)
        self.n = 0
        self.seen = set()  # every text Night Watch ever put in its file
        self.visible = set()  # lines a pass found in the file: each must stay a lesson or a conflict's text

    def new_text(self):
        self.n += 1
        text = f"Line {self.n:03d} the agent wrote"
        self.seen.add(text)
        return text

    def append(self, n):
        nw_append(self.file, section("2026-03-01", *[f"[OBSERVATION] {self.new_text()}" for _ in range(n)]))

    def bullets(self):
        if not self.file.exists():
            return []
        return [i for i, line in enumerate(self.file.read_text().split("\n")) if line.startswith("- ")]

    def rewrite(self, k, change):
        lines = self.file.read_text().split("\n") if self.file.exists() else []
        bullets = self.bullets()
        if not bullets:
            return
        i = bullets[k % len(bullets)]
        if change:
            lines[i] = f"- [OBSERVATION] {self.new_text()}"
        else:
            del lines[i]
        nw_rewrite(self.file, "\n".join(lines))

    def memory(self):
        from tests.sync.conftest import memory_of

        return memory_of("Dev")

    def active(self):
        return list(Lesson.objects.filter(memory__persona__name="Dev", status="active").order_by("id"))

    def person_acts(self, k, delete):
        if not self.file.exists() or not engine.SyncedFolder.objects.exists():
            return
        lessons = self.active()
        if not lessons:
            return
        lesson = lessons[k % len(lessons)]
        if delete:
            if not lesson.protected:
                services.lesson_delete(lesson=lesson, actor=self.person)
        else:
            services.lesson_update(lesson=lesson, actor=self.person, text=f"{lesson.text} (edited)")

    def run_pass(self, how, monkeypatch):
        real_write, real_replace = engine._write, os.replace
        done = []

        def write(read, data, folder):
            if not done and read.name == "working.md":
                done.append(1)
                self.append(1)
            return real_write(read, data, folder)

        def replace(src, dst):
            fd = None
            if not done and str(dst).endswith("working.md") and os.path.exists(dst):
                done.append(1)
                fd = os.open(dst, os.O_WRONLY | os.O_APPEND)
            real_replace(src, dst)
            if fd is not None:
                os.write(fd, section("2026-03-02", f"[OBSERVATION] {self.new_text()}").encode())
                os.close(fd)

        if how == "append_before_replace":
            monkeypatch.setattr(engine, "_write", write)
        elif how == "append_after_replace":
            monkeypatch.setattr(os, "replace", replace)
        try:
            # What the pass can see: every line in the file now, and what earlier passes saw.
            on_disk = self.file.read_text() if self.file.exists() else ""
            self.visible |= {text for text in self.seen if text in on_disk}
            before = set(self.visible)
            if self.file.exists():
                report = engine.sync_pass(self.root)
                assert not report.failed, [f.error for f in report.failed]
                event(
                    f"pass: retried {min(sum(f.retries for f in report.folders), 1)}, "
                    f"Night Watch removals {min(sum(f.removed for f in report.folders), 1)}"
                )
        finally:
            monkeypatch.setattr(engine, "_write", real_write)
            monkeypatch.setattr(os, "replace", real_replace)
        self.check(before)

    def check(self, visible):
        """Nothing Night Watch wrote before the pass is lost; conflicts are all in the review queue."""
        if not engine.SyncedFolder.objects.exists():
            return
        stored = set(Lesson.objects.filter(memory__persona__name="Dev").values_list("text", flat=True))
        held = set()
        for c in SyncConflict.objects.all():
            held |= {c.file_line, *c.earlier_file_lines}
        for text in visible:
            # Every line is a lesson (any status: a removal is a revertible deletion) or a conflict's text.
            assert text in stored or any(text in line for line in held) or any(s.startswith(text) for s in stored), text
        pending = SyncConflict.objects.filter(status="pending")
        event(f"conflicts waiting: {min(pending.count(), 2)}")
        queue = counts_by_source(EVERY_MEMORY).get("file-conflicts", {})
        assert sum(queue.values()) == pending.count()
        file_text = self.file.read_text()
        for c in pending:
            if c.file_line:
                assert c.file_line in file_text  # Night Watch's side is not written over
        conflicted = set(pending.values_list("lesson_id", flat=True))
        for lesson in self.active():
            if lesson.pk not in conflicted:
                # Every active lesson (a person's edit included) is in the file, exactly once.
                assert file_text.count(f"] {lesson.text}\n") == 1, (lesson.text, file_text)
        if not conflicted:
            compiled = compile_memory(self.memory()).text  # "" for an empty memory: then the files are empty
            assert get_memory(self.file.parent).rstrip() == (compiled or get_memory_of_nothing()).rstrip()


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(op, max_size=25))
def test_no_line_is_ever_lost_and_every_conflict_waits_for_review(db, admin_user, monkeypatch, ops):
    with tempfile.TemporaryDirectory() as tmp, transaction.atomic():
        Lesson.objects.filter(memory__persona__name="Dev").delete()
        note(repr(ops))
        world = World(Path(tmp) / "agents", admin_user)
        world.append(1)
        for kind, arg in [*ops, ("pass", "plain"), ("pass", "plain")]:
            if kind == "append":
                world.append(arg)
            elif kind in ("rewrite_drop", "rewrite_change"):
                world.rewrite(arg, change=kind == "rewrite_change")
            elif kind in ("edit", "delete"):
                world.person_acts(arg, delete=kind == "delete")
            else:
                world.run_pass(arg, monkeypatch)
        # After the last passes, every line appended (and not removed by either side) is active, once.
        file_text = world.file.read_text()
        for text in world.seen:
            rows = Lesson.objects.filter(text=text, status="active").count()
            if rows:
                assert rows == 1 and file_text.count(f"] {text}\n") == 1, text
        transaction.set_rollback(True)
