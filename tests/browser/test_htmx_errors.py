"""An htmx action the server refuses tells the user why, in an announced alert, instead of doing nothing."""

from django.contrib.auth.models import Group
from playwright.sync_api import expect

from memory.models import Lesson, LessonStatus
from tests.browser.audit import PageWatch
from tests.browser.dashboard_data import seed


def test_a_403_on_an_htmx_action_says_why(page, login, make_user, screenshot):
    memory = seed()
    curator = make_user("cur", role="curator")
    login("cur")
    page.goto(memory.get_absolute_url())
    lesson = Lesson.objects.get(memory=memory, text__startswith="Add an index")
    row = page.locator(f"#lesson-{lesson.pk}")
    # The curator role is taken away while the page is open.
    curator.groups.remove(Group.objects.get(name="curator"))
    curator.groups.add(Group.objects.get(name="viewer"))
    watch = PageWatch(page)
    row.get_by_role("button", name="Delete").click()
    alert = page.get_by_role("alert").filter(has_text="Your account cannot do this")
    expect(alert).to_be_visible()
    expect(alert).to_contain_text("editing lessons the curator role")
    assert any("HTTP 403" in problem for problem in watch.take())
    screenshot("refused")
    lesson.refresh_from_db()
    assert lesson.status == LessonStatus.ACTIVE
    expect(row.get_by_role("button", name="Delete")).to_be_visible()  # the row was left as it was
    alert.get_by_role("button", name="Dismiss").click()
    expect(page.locator("#request-error")).to_be_empty()
