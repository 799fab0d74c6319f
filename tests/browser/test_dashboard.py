"""The review dashboard in a real browser: log in, filter, edit inline, delete/restore, revert."""

import re

from django.contrib.auth.models import User
from playwright.sync_api import expect

from memory import services
from memory.models import Change, Lesson, LessonStatus
from tests.browser.dashboard_data import seed


def _lesson(memory, text_start):
    return Lesson.objects.get(memory=memory, text__startswith=text_start)


def test_home_grid_and_memory_page(page, login, make_user, screenshot):
    memory = seed()
    make_user("lead", role="viewer")
    page.goto(memory.get_absolute_url())  # anonymous: sent to the login form
    expect(page).to_have_url(re.compile(r"/accounts/login/\?next="))
    screenshot("login")
    login("lead")
    expect(page.locator("#memory-list")).to_be_visible()
    expect(page.locator("li.memory-card")).to_have_count(5)  # a card per memory; none of the archived persona
    expect(page.locator(".budget-over").first).to_be_visible()  # a tier over its budget is red
    screenshot("home")
    expect(page.locator("main")).not_to_contain_text("Legacy Bot")
    # A phone reads the same cards in one column, without scrolling sideways.
    page.set_viewport_size({"width": 390, "height": 844})
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    page.set_viewport_size({"width": 1400, "height": 900})
    page.goto(memory.get_absolute_url())
    expect(page.locator(".tier-heading").first).to_contain_text("Core Lessons")
    expect(page.locator(".budget-marker")).to_have_count(1)
    # A viewer sees no curation buttons.
    expect(page.locator(".lesson-actions")).to_have_count(0)
    # Hidden characters are shown as chips with a warning.
    expect(page.locator(".lesson .invisible-char").first).to_have_text("⟦U+200B⟧")
    expect(page.locator(".lesson .badge-danger")).to_contain_text("Hidden characters")
    screenshot("memory")
    page.get_by_role("link", name="Compiled prompt").click()
    expect(page.locator("pre.prompt")).to_contain_text("## Core Lessons")
    screenshot("prompt")


def test_filter_by_category_and_path(page, login, make_user, screenshot):
    memory = seed()
    make_user("lead", role="viewer")
    login("lead")
    page.goto(memory.get_absolute_url())
    expect(page.locator("article.lesson")).to_have_count(10)
    page.select_option("#f-category", "DECISION")  # htmx swaps the list on change
    expect(page.locator("article.lesson")).to_have_count(2)
    expect(page).to_have_url(re.compile(r"category=DECISION"))
    page.select_option("#f-category", "")
    expect(page.locator("article.lesson")).to_have_count(10)
    page.fill("#f-path", "src/auth/")
    page.press("#f-path", "Enter")
    expect(page.locator("article.lesson")).to_have_count(3)
    expect(page.locator("article.lesson .ref").first).to_contain_text("src/auth/")
    screenshot("filtered")


def test_edit_a_lesson_inline(page, login, make_user, screenshot):
    memory = seed()
    make_user("cur", role="curator")
    login("cur")
    page.goto(memory.get_absolute_url())
    lesson = _lesson(memory, "The retry decorator")
    row = page.locator(f"#lesson-{lesson.pk}")
    row.get_by_role("link", name="Edit").click()
    textarea = page.locator(f"#lesson-{lesson.pk} textarea[name=text]")
    expect(textarea).to_be_focused()  # keyboard users land in the form
    # htmx binds the form's Escape trigger when it settles the swap; a person cannot press that
    # fast, a test on a busy machine can.
    page.wait_for_function("() => !document.querySelector('.htmx-request, .htmx-added, .htmx-settling')")
    textarea.press("Escape")  # and can leave it without a mouse
    expect(page.locator(f"#lesson-{lesson.pk} textarea")).to_have_count(0)
    row.get_by_role("link", name="Edit").focus()
    page.keyboard.press("Enter")
    expect(textarea).to_be_focused()
    screenshot("editing")
    textarea.fill("The retry decorator swallows `TimeoutError`; **re-raise** after the last attempt.")
    page.select_option(f"#id_relevance-{lesson.pk}", "high")
    page.fill(f"#id_refs-{lesson.pk}", "src/common/retry.py#L5-L30")
    page.fill(f"#id_reason-{lesson.pk}", "make it actionable")
    page.keyboard.press("Tab")
    page.locator(f"#lesson-{lesson.pk}").get_by_role("button", name="Save").press("Enter")
    expect(page.locator(f"#lesson-{lesson.pk} .lesson-text strong")).to_have_text("re-raise")
    expect(page.locator(f"#lesson-{lesson.pk} a.ref")).to_have_attribute(
        "href", "https://github.com/acme/checkout-api/blob/main/src/common/retry.py#L5-L30"
    )
    lesson.refresh_from_db()
    assert lesson.relevance == "high"
    assert Change.objects.filter(lesson=lesson).first().batch.reason == "make it actionable"
    # A bad ref is an error in the form; nothing changes.
    page.locator(f"#lesson-{lesson.pk}").get_by_role("link", name="Edit").click()
    expect(textarea).to_be_focused()
    page.fill(f"#id_refs-{lesson.pk}", "src/a.py#L9-L2")
    page.locator(f"#lesson-{lesson.pk}").get_by_role("button", name="Save").click()
    expect(page.locator(f"#lesson-{lesson.pk} .field-error")).to_contain_text("ends before it starts")
    screenshot("edit-error")
    assert [r.as_text() for r in lesson.refs.all()] == ["src/common/retry.py#L5-L30"]


def test_delete_and_restore(page, login, make_user, screenshot):
    memory = seed()
    make_user("cur", role="curator")
    login("cur")
    page.goto(memory.get_absolute_url())
    lesson = _lesson(memory, "Add an index")
    row = page.locator(f"#lesson-{lesson.pk}")
    row.locator("input[name=reason]").fill("done in PR #900")
    row.get_by_role("button", name="Delete").click()
    expect(row.locator(".badge-status-deleted")).to_be_visible()
    expect(page.locator("#memory-summary .stat-num").nth(1)).to_have_text("6")  # working count follows
    lesson.refresh_from_db()
    assert lesson.status == LessonStatus.DELETED
    screenshot("deleted")
    row.get_by_role("button", name="Restore").click()
    expect(row.get_by_role("button", name="Delete")).to_be_visible()
    lesson.refresh_from_db()
    assert lesson.status == LessonStatus.ACTIVE
    # The deleted filter finds it again after another delete.
    row.get_by_role("button", name="Delete").click()
    expect(row.locator(".badge-status-deleted")).to_be_visible()
    page.goto(memory.get_absolute_url() + "?status=deleted")
    expect(page.locator("article.lesson")).to_have_count(1)


def test_revert_a_change_and_a_batch(page, login, make_user, screenshot):
    memory = seed()
    make_user("cur", role="curator")
    login("cur")
    lesson = _lesson(memory, "Use UTC everywhere")
    page.goto(memory.get_absolute_url())
    row = page.locator(f"#lesson-{lesson.pk}")
    row.get_by_role("link", name="Edit").click()
    page.locator(f"#lesson-{lesson.pk} textarea[name=text]").fill("Use local time in the API.")
    page.locator(f"#lesson-{lesson.pk}").get_by_role("button", name="Save").click()
    expect(row.locator(".lesson-text")).to_have_text("Use local time in the API.")
    row.get_by_role("link", name="History & provenance").click()
    expect(page.locator(".change").first.locator("del").first).to_have_text("UTC everywhere")
    screenshot("lesson-history")
    page.locator(".change").first.get_by_role("button", name="Revert this change").click()
    expect(page.locator(".msg-success")).to_contain_text("reverted")
    lesson.refresh_from_db()
    assert lesson.text == "Use UTC everywhere in the API; convert in the client."
    # A later edit of another lesson of the reflection batch blocks reverting the batch as a whole.
    other = _lesson(memory, "Flaky checkout test")
    services.lesson_update(
        lesson=other,
        actor=services.Actor.for_user(User.objects.get(username="cur")),
        text="Flaky checkout test: the ledger stub is not reset between tests.",
    )
    page.goto(memory.history_url())
    batch = page.locator(".batch", has_text="reflection after PR #812")
    batch.get_by_role("button", name="Revert the whole batch").click()
    expect(page.locator("#flash .alert-error")).to_contain_text("changed again after this")
    screenshot("history-blocked")
    assert Lesson.objects.get(pk=lesson.pk).status == LessonStatus.ACTIVE
    # Undo the later edit first (newest batch, on top), then the whole batch reverts as one change.
    page.locator(".batch").first.get_by_role("button", name="Revert this change").click()
    expect(page.locator(".msg-success")).to_contain_text("Manual edit #")
    page.locator(".batch", has_text="reflection after PR #812").get_by_role(
        "button", name="Revert the whole batch"
    ).click()
    expect(page.locator(".msg-success")).to_contain_text("Reflection #")
    screenshot("history-reverted")
    assert set(Lesson.objects.filter(memory=memory, tier="working").values_list("status", flat=True)) == {"deleted"}
