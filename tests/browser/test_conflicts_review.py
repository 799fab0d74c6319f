"""A lead reviews lesson conflicts in a real browser: each decision once (keep the newer, keep the
older, keep both, edit then keep), one reverted from the memory's history, several triaged with the
keyboard alone. After each, the memory's page and what the agent reads (the API context, with the
persona's own token) show the outcome at once."""

from playwright.sync_api import expect

from memory.conflicts import CONFLICT_MARK
from memory.models import Lesson, LessonConflict, LessonStatus
from memory.tokens import agent_token_create
from tests.browser.audit import axe_violations, horizontal_overflow
from tests.conflicts.conftest import make_conflict
from tests.factories import MemoryFactory


class Agent:
    """The persona's agent reading its compiled memory over HTTP, as it would before a run."""

    def __init__(self, page, memory):
        _, raw = agent_token_create(persona=memory.persona)
        self.page, self.headers = page, {"Authorization": f"Bearer {raw}"}
        self.url = f"/api/v1/memory/{memory.persona.name}/{memory.project.slug}/context"

    def lessons(self):
        response = self.page.request.get(self.url + "?format=json", headers=self.headers)
        assert response.status == 200, response.text()
        return {item["id"]: item["text"] for item in response.json()["lessons"]}

    def text(self):
        return self.page.request.get(self.url, headers=self.headers).text()


def _memory_page_shows(page, memory, lesson):
    page.goto(memory.get_absolute_url())
    return page.locator(f"#lesson-{lesson.pk}").count() == 1


def _focused_card(page):
    return page.evaluate("document.activeElement.closest('.triage-card')?.id || ''")


def _card(page, conflict):
    return page.locator(f"#conflict-{conflict.pk}")


def test_a_lead_decides_each_way_reverts_one_and_triages_with_the_keyboard(page, login, make_user, screenshot):
    memory = MemoryFactory(persona__name="Maya", project__name="Payments")
    newer_wins, older_wins, both, edited, *keyed = [make_conflict(memory, n) for n in range(8)]
    agent = Agent(page, memory)
    disputed = agent.lessons()
    assert all(disputed[c.older_id].endswith(CONFLICT_MARK) for c in (newer_wins, older_wins, both, edited))
    make_user("lead", role="approver")
    login("lead")

    # On a phone, the list and a conflict's page fit the width; the count says how many wait.
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto("/conflicts/")
    expect(page.locator("#conflicts-count")).to_contain_text("8 conflicts")
    assert horizontal_overflow(page)["over"] == 0
    assert axe_violations(page) == []
    page.goto(f"/conflicts/{edited.pk}/")
    page.get_by_text("Edit the newer, then keep it").click()
    assert horizontal_overflow(page)["over"] == 0
    screenshot("phone-detail")
    page.set_viewport_size({"width": 1280, "height": 900})

    # Keep the newer: the older lesson leaves the memory and the agent's context.
    page.goto("/conflicts/")
    _card(page, newer_wins).get_by_role("button", name="Keep the newer").click()
    expect(_card(page, newer_wins).locator(".alert-success")).to_contain_text("Kept the newer lesson")
    expect(page.locator("#conflicts-count")).to_have_text("7 conflicts")
    revert_link = _card(page, newer_wins).locator(".alert-success a.revert-link")
    expect(revert_link).to_contain_text("Revert batch #")
    lessons = agent.lessons()
    assert newer_wins.older_id not in lessons and CONFLICT_MARK not in lessons[newer_wins.newer_id]

    # Keep the older: the newer one goes, the older loses its mark.
    _card(page, older_wins).get_by_role("button", name="Keep the older").click()
    expect(_card(page, older_wins).locator(".alert-success")).to_contain_text("Kept the older lesson")
    lessons = agent.lessons()
    assert older_wins.newer_id not in lessons and not lessons[older_wins.older_id].endswith(CONFLICT_MARK)

    # Keep both, from the conflict's own page with its key: both stay, neither marked.
    page.goto(f"/conflicts/{both.pk}/")
    page.keyboard.press("b")
    expect(_card(page, both).locator(".alert-success")).to_contain_text("Kept both")
    page.goto("/conflicts/")
    lessons = agent.lessons()
    assert lessons[both.older_id] == "Queue 2 workers run with celery." and both.newer_id in lessons

    # Edit the newer, then keep it: a bad edit is refused and changes nothing, then the right one lands.
    card = _card(page, edited)
    card.get_by_text("Edit the newer, then keep it").click()
    card.locator(".conflict-newer textarea").fill("Queue 3 workers run with dramatiq \x07 now.")
    card.get_by_role("button", name="Save the newer and keep it").click()
    expect(_card(page, edited).locator(".alert-error")).to_contain_text("Not decided: lesson text")
    assert LessonConflict.objects.get(pk=edited.pk).status == "pending"
    card = _card(page, edited)
    card.locator(".conflict-newer textarea").fill("Queue 3 workers run with dramatiq since the March move.")
    card.get_by_role("button", name="Save the newer and keep it").click()
    expect(_card(page, edited).locator(".alert-success")).to_contain_text("Edited the newer lesson and kept it")
    lessons = agent.lessons()
    assert lessons[edited.newer_id] == "Queue 3 workers run with dramatiq since the March move."
    assert edited.older_id not in lessons
    assert "Queue 3 workers run with dramatiq since the March move." in agent.text()
    screenshot("decided-each-way")

    # The memory's page shows the same at once.
    assert not _memory_page_shows(page, memory, newer_wins.older)
    assert not _memory_page_shows(page, memory, older_wins.newer)
    assert _memory_page_shows(page, memory, both.older) and _memory_page_shows(page, memory, both.newer)
    expect(page.locator(f"#lesson-{edited.newer_id}")).to_contain_text("since the March move")

    # Revert the first decision from its link: the conflict waits again, the older line is back, marked.
    page.goto(f"/conflicts/{newer_wins.pk}/")
    page.locator(".decision a.revert-link").click()
    batch = LessonConflict.objects.get(pk=newer_wins.pk).batch_id
    page.wait_for_url(f"**/history/#batch-{batch}")
    page.locator(f"#batch-{batch} .batch-foot button").click()
    page.locator(f"#batch-{batch} .badge", has_text="Reverted by batch").wait_for()
    assert LessonConflict.objects.get(pk=newer_wins.pk).status == "pending"
    assert agent.lessons()[newer_wins.older_id].endswith(CONFLICT_MARK)
    assert _memory_page_shows(page, memory, newer_wins.older)

    # Keyboard triage of what waits: newest first, so the four keyed conflicts, then the reverted one.
    page.goto("/conflicts/")
    expect(page.locator("#conflicts-count")).to_contain_text("5 conflicts")
    page.keyboard.press("?")
    assert page.locator("#keys-help").evaluate("el => el.open")
    page.keyboard.press("?")
    page.evaluate("document.activeElement.blur()")
    keyed.reverse()
    page.keyboard.press("j")
    assert _focused_card(page) == f"conflict-{keyed[0].pk}"
    assert page.evaluate("getComputedStyle(document.activeElement).outlineStyle") not in ("", "none")
    page.keyboard.press("x")
    page.keyboard.press("j")
    page.keyboard.press("x")
    expect(page.locator("#triage-status")).to_contain_text("2 selected")
    assert page.locator("#selected-count").inner_text() == "2"
    assert page.evaluate("getComputedStyle(document.activeElement).backgroundColor") != "rgb(255, 255, 255)"
    page.keyboard.press("n")  # keep the newer of both selected
    page.locator("#bulk-result").get_by_text("Decided 2 conflicts").wait_for()
    expect(page.locator("#conflicts-count")).to_have_text("3 conflicts")
    expect(_card(page, keyed[1])).to_be_focused()
    assert page.locator("#bulk-result a.revert-link").count() == 2

    page.keyboard.press("j")
    assert _focused_card(page) == f"conflict-{keyed[2].pk}"
    page.keyboard.press("o")  # keep the older of this one (nothing is selected)
    expect(_card(page, keyed[2]).locator(".alert-success")).to_contain_text("Kept the older lesson")
    expect(_card(page, keyed[2])).to_be_focused()

    # e opens the newer's edit form with the cursor in its text; typed keys stay text; Esc goes back.
    page.keyboard.press("j")
    assert _focused_card(page) == f"conflict-{keyed[3].pk}"
    page.keyboard.press("e")
    assert page.evaluate("document.activeElement.name") == "text"
    page.keyboard.type(" nob")
    page.keyboard.press("Escape")
    assert _focused_card(page) == f"conflict-{keyed[3].pk}"
    assert LessonConflict.objects.get(pk=keyed[3].pk).status == "pending"
    page.keyboard.press("b")  # keep both
    expect(_card(page, keyed[3]).locator(".alert-success")).to_contain_text("Kept both")
    expect(_card(page, keyed[3])).to_be_focused()

    page.keyboard.press("j")
    assert _focused_card(page) == f"conflict-{newer_wins.pk}"
    page.keyboard.press("n")
    expect(_card(page, newer_wins).locator(".alert-success")).to_contain_text("Kept the newer lesson")
    screenshot("triaged")

    lessons = agent.lessons()
    for conflict in [*keyed[:2], newer_wins]:
        assert conflict.older_id not in lessons and not lessons[conflict.newer_id].endswith(CONFLICT_MARK)
    assert keyed[2].newer_id not in lessons and not lessons[keyed[2].older_id].endswith(CONFLICT_MARK)
    assert lessons[keyed[3].older_id] == f"Queue {keyed[3].older.text.split()[1]} workers run with celery."
    assert CONFLICT_MARK not in agent.text()
    assert set(LessonConflict.objects.values_list("status", flat=True)) == {"resolved", "dismissed"}
    assert Lesson.objects.filter(memory=memory, status=LessonStatus.SUPERSEDED).count() == 4
    page.goto("/conflicts/")
    expect(page.get_by_text("No conflict is waiting for review.")).to_be_visible()

    # "Keep both" changed no lesson, so it is undone on its card: the older line is marked again.
    page.goto(f"/conflicts/{both.pk}/")
    page.get_by_role("button", name="Reopen").click()
    expect(_card(page, both).locator(".alert-success")).to_contain_text("waits for review again")
    assert agent.lessons()[both.older_id].endswith(CONFLICT_MARK)
