"""A lesson conflict in a real browser: both lessons side by side, readable on a phone, decided by keyboard."""

from datetime import date

from playwright.sync_api import expect

from memory.conflicts.services import conflicts_detect
from memory.models import LessonConflict, LessonStatus
from tests.browser.audit import axe_violations, horizontal_overflow
from tests.factories import MemoryFactory, make_lesson


def test_decide_a_conflict_with_the_keyboard(page, login, make_user):
    memory = MemoryFactory()
    older = make_lesson(memory, "Install frontend dependencies with npm install in <web/>.", day=date(2026, 1, 10))
    make_lesson(memory, "Install frontend dependencies with pnpm install in <web/>.", day=date(2026, 3, 2))
    conflicts_detect(memory=memory)
    conflict = LessonConflict.objects.get()
    make_user("lead", role="approver")
    login("lead")

    page.set_viewport_size({"width": 390, "height": 844})
    page.goto("/conflicts/")
    expect(page.get_by_role("link", name=f"Conflict #{conflict.pk}")).to_be_visible()
    page.goto(f"/conflicts/{conflict.pk}/")
    expect(page.locator(f'[data-lesson="{older.pk}"]')).to_have_text(older.text)
    assert horizontal_overflow(page)["over"] == 0
    assert axe_violations(page) == []

    button = page.get_by_role("button", name="Keep the newer")
    button.focus()
    page.keyboard.press("Enter")
    expect(page.locator(f"#conflict-{conflict.pk} .alert-success")).to_contain_text("Kept the newer lesson")
    older.refresh_from_db()
    assert older.status == LessonStatus.SUPERSEDED
