"""Two leads of two teams search the same words: each sees their own team's lessons and counts only,
reached with the `/` key from any page; the results page fits a 390 px phone."""

from django.contrib.auth.models import User

from personas.models import Membership, Team
from tests.browser.audit import horizontal_overflow
from tests.factories import MemoryFactory, PersonaFactory, ProjectFactory, make_lesson

PASSWORD = "pw-for-tests-1"


def _team(label, n):
    team = Team.objects.create(name=f"Team {label}", slug=f"team-{label}")
    memory = MemoryFactory(
        persona=PersonaFactory(name=f"Agent {label}", team=team),
        project=ProjectFactory(slug=f"shop-{label}", name=f"Shop {label}", team=team),
    )
    for i in range(n):
        make_lesson(memory, f"Refund retries of {label} number {i} in src/billing/refund_{label}.py", refs="src/a.py")
    lead = User.objects.create_user(username=f"lead-{label}", password=PASSWORD)
    Membership.objects.create(team=team, user=lead, role="viewer")
    return lead


def test_two_leads_see_only_their_teams_lessons_and_counts(page, login, transactional_db):
    _team("red", 3)
    _team("blue", 5)
    for label, mine, theirs, count in (("red", "red", "blue", "3"), ("blue", "blue", "red", "5")):
        page.context.clear_cookies()
        login(f"lead-{label}", PASSWORD)
        page.goto("/")
        page.keyboard.press("/")
        assert page.evaluate("document.activeElement.id") == "nav-q"
        page.keyboard.type("refund retries")
        page.keyboard.press("Enter")
        page.wait_for_url("**/search/?q=refund+retries")
        hits = page.locator(".search-hit")
        assert hits.count() == int(count)
        assert page.locator(".search-count strong").inner_text() == count
        body = page.locator("main").inner_text()
        assert f"Team {mine}" in body and mine in hits.first.inner_text()
        for trace in (f"Team {theirs}", f"Agent {theirs}", f"Shop {theirs}", f"refund_{theirs}", f"of {theirs}"):
            assert trace not in body
        assert page.locator(".search-hit mark").first.inner_text().lower() == "refund"
        # Typing "/" into the search field types it, it does not jump.
        page.fill("#id_q", "")
        page.locator("#id_q").type("src/billing/")
        assert page.input_value("#id_q") == "src/billing/"


def test_results_fit_a_phone(page, login, transactional_db):
    _team("red", 4)
    page.set_viewport_size({"width": 390, "height": 844})
    login("lead-red", PASSWORD)
    page.goto("/search/?q=refund&ref=src/")
    assert page.locator(".search-hit").count() == 4
    overflow = horizontal_overflow(page)
    assert overflow["over"] == 0, overflow


def test_a_question_no_lesson_answers_word_for_word_shows_the_closest_and_says_so_on_a_phone(
    page, login, transactional_db
):
    _team("red", 2)
    _team("blue", 2)
    page.set_viewport_size({"width": 390, "height": 844})
    login("lead-red", PASSWORD)
    page.goto("/")
    page.keyboard.press("/")
    page.keyboard.type("why are refund retries failing for the shop")
    page.keyboard.press("Enter")
    page.wait_for_url("**/search/?q=*")
    notice = page.locator(".search-relaxed")
    assert "No lesson holds every word of" in notice.inner_text()
    assert page.locator(".search-hit").count() == 2  # red's lessons only, even when any word will do
    assert "blue" not in page.locator("main").inner_text().lower()
    assert horizontal_overflow(page)["over"] == 0
