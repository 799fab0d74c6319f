"""`sync_memory --watch` reacts to Night Watch's writes within about a second."""

import threading
import time

import pytest

from memory.models import Lesson
from memory.sync.watch import watch_passes
from tests.sync.conftest import nw_append, section

pytestmark = pytest.mark.django_db


def test_an_append_is_taken_in_about_a_second_after_night_watch_writes_it(root, working):
    nw_append(working(), section("2026-03-01", "[OBSERVATION] Already there"))
    stop, written_at, seen_at = threading.Event(), [], []
    first_pass = threading.Event()

    def agent():
        first_pass.wait(timeout=30)
        nw_append(working(), section("2026-03-02", "[TODO] Written while the watcher runs", category="TODO"))
        written_at.append(time.monotonic())

    def after_pass(report):
        assert not report.failed
        first_pass.set()
        if Lesson.objects.filter(text="Written while the watcher runs", status="active").exists():
            seen_at.append(time.monotonic())
            stop.set()

    writer = threading.Thread(target=agent)
    writer.start()
    deadline = threading.Timer(30, stop.set)  # a watcher that never sees the write fails below, not hangs
    deadline.start()
    try:
        watch_passes(root, stop=stop, after_pass=after_pass, idle_seconds=30)
    finally:
        deadline.cancel()
        writer.join()
    assert seen_at, "the append was never taken in"
    assert seen_at[0] - written_at[0] < 1.5
    assert "Written while the watcher runs" in working().read_text()
