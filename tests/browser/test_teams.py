"""Two leads of two teams, logged in side by side: each sees only their own team's memories, queue and
counts, and an approval by one changes nothing the other sees."""

from datetime import date

from django.contrib.auth.models import User

from memory.promotions.services import promotion_detect
from personas.models import Membership, Team
from tests.factories import MemoryFactory, PersonaFactory, ProjectFactory, make_lesson
from tests.promotions.conftest import THEME


def _team_with_a_pending_promotion(label, persona_name, project_name):
    team = Team.objects.create(name=f"Team {label}", slug=label.lower())
    memory = MemoryFactory(
        persona=PersonaFactory(name=persona_name, team=team),
        project=ProjectFactory(name=project_name, slug=project_name.lower().replace(" ", "-"), team=team),
    )
    for i, (text, ref) in enumerate(THEME):
        make_lesson(memory, text, refs=ref, day=date(2026, 1, 5 + 7 * i))
    candidate = promotion_detect(memory=memory).created[0]
    lead = User.objects.create_user(f"lead-{label.lower()}", password="pw-for-tests-1")
    Membership.objects.create(team=team, user=lead, role="approver")
    return memory, candidate


def _log_in(page, username):
    page.goto("/accounts/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", "pw-for-tests-1")
    page.click("button[type=submit]")
    page.wait_for_url(lambda url: "/accounts/login/" not in url)


def _home(page):
    page.goto("/")
    return page.locator("main").inner_text()


def test_two_leads_side_by_side(chromium, live_server, transactional_db, screenshot, page):
    red_memory, red_candidate = _team_with_a_pending_promotion("Red", "Rhea", "Payments API")
    _blue_memory, _ = _team_with_a_pending_promotion("Blue", "Bruno", "Search Service")

    red = page  # the first lead's window
    blue_context = chromium.new_context(base_url=live_server.url, viewport={"width": 390, "height": 844})
    blue = blue_context.new_page()
    blue.set_default_timeout(10_000)
    try:
        _log_in(red, "lead-red")
        _log_in(blue, "lead-blue")

        red_home, blue_home = _home(red), _home(blue)
        assert "Rhea × Payments API" in red_home and "Bruno" not in red_home and "Search Service" not in red_home
        assert "Bruno × Search Service" in blue_home and "Rhea" not in blue_home and "Payments API" not in blue_home
        for home in (red_home, blue_home):
            assert "1 promotion" in home and "1 memory" in home
        assert red.locator("header .menu-toggle .badge").inner_text() == "1"
        assert blue.locator("header .menu-toggle .badge").inner_text() == "1"

        # The other team's memory and promotion are not found at all.
        assert blue.goto(red_memory.get_absolute_url()).status == 404
        assert blue.goto(f"/promotions/{red_candidate.pk}/").status == 404
        blue.goto("/promotions/")
        assert "Rhea" not in blue.locator("main").inner_text()

        # Red approves their promotion.
        red.goto("/promotions/")
        red.locator(f"#candidate-{red_candidate.pk} button[name=approve]").click()
        red.locator(f"#candidate-{red_candidate.pk} .core-lesson").wait_for()
        red_home = _home(red)
        assert "Nothing waits for review" in red_home
        assert "1 core" in red.locator(f"[data-memory='{red_memory.pk}']").inner_text().replace("\n", " ")
        screenshot("red-after-approve")

        # Blue sees exactly what they saw before.
        blue_home = _home(blue)
        assert "1 promotion" in blue_home and "Rhea" not in blue_home
        assert blue.locator("header .menu-toggle .badge").inner_text() == "1"
        blue.goto("/promotions/")
        assert "Rhea" not in blue.locator("main").inner_text()
    finally:
        blue_context.close()
