"""A file conflict in Chromium: the list and the page fit a phone, pass axe, and a curator settles it."""

import pytest
from django.contrib.auth.models import User

from memory import services
from memory.models import Lesson
from memory.sync.engine import sync_pass
from memory.sync.models import SyncConflict
from tests.browser.audit import PageWatch, axe_violations, horizontal_overflow
from tests.sync.conftest import nw_append, nw_rewrite, section

DESKTOP = {"width": 1400, "height": 900}
PHONE = {"width": 390, "height": 844}


@pytest.fixture
def conflict(transactional_db, tmp_path):
    boss = User.objects.create_superuser("boss", "boss@example.com", "pw-for-tests-1")
    working = tmp_path / "agents/Dev/memories/billing api/working.md"
    long = "a very long lesson about the retry loop " * 6
    nw_append(working, section("2026-03-01", f"[OBSERVATION] {long}uses a fixed delay (ref: src/queue/worker.ts#L88)"))
    sync_pass(tmp_path / "agents")
    lesson = Lesson.objects.get()
    services.lesson_update(lesson=lesson, actor=services.Actor.for_user(boss), text=lesson.text + " of 2 s")
    nw_rewrite(working, working.read_text().replace("uses a fixed delay", "has <script>no</script> backoff"))
    sync_pass(tmp_path / "agents")
    return SyncConflict.objects.get()


def test_conflict_pages_fit_pass_axe_and_a_person_settles_with_the_keyboard(page, login, conflict):
    watch = PageWatch(page)
    login("boss")
    problems = []
    for viewport in (DESKTOP, PHONE):
        page.set_viewport_size(viewport)
        for url in ("/file-conflicts/", f"/file-conflicts/{conflict.pk}/", conflict.memory.get_absolute_url()):
            page.goto(url)
            page.wait_for_load_state("networkidle")
            overflow = horizontal_overflow(page)
            if overflow["over"] > 0:
                problems.append(
                    f"{url} at {viewport['width']}px: {overflow['over']}px too wide: {overflow['culprits']}"
                )
            problems += [f"{url}: {line}" for line in watch.take()]
            problems += [f"{url}: axe {line}" for line in axe_violations(page)]
    assert not problems, "\n".join(problems)

    page.goto(f"/file-conflicts/{conflict.pk}/")
    assert "has <script>no</script> backoff" in page.inner_text("main")  # shown as text, never run
    page.get_by_label("Both, as two lessons").check()
    page.keyboard.press("Tab")
    page.keyboard.press("Enter")
    page.wait_for_url(f"**{conflict.memory.get_absolute_url()}")
    conflict.refresh_from_db()
    assert conflict.status == "resolved" and conflict.choice == "both"
