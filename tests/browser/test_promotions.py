"""Review a promotion in a real browser: edit the proposed text, approve, see the core lesson on the memory
page and the badge drop."""

from datetime import date

from memory.models import Lesson
from memory.promotions.services import promotion_detect
from tests.factories import MemoryFactory, make_lesson
from tests.promotions.conftest import THEME


def _pending_candidates():
    memory = MemoryFactory(persona__name="Security Reviewer", project__name="Payments API")
    for i, (text, ref) in enumerate(THEME):
        make_lesson(memory, text, refs=ref, day=date(2026, 1, 5 + 7 * i))
    other = MemoryFactory(persona__name="Tech Lead", project__name="Payments API")
    for day in (3, 9, 15):
        make_lesson(
            other,
            "Feature flags are read once per request from config/flags.yml",
            refs="config/flags.yml",
            day=date(2026, 2, day),
        )
    first = promotion_detect(memory=memory).created[0]
    promotion_detect(memory=other)
    return memory, first


def test_edit_then_approve_in_the_inbox(page, login, make_user, screenshot):
    memory, candidate = _pending_candidates()
    make_user("lead", role="approver")
    login("lead")

    page.goto("/promotions/")
    badge = page.locator("header #promotions-badge")
    assert badge.inner_text() == "2"
    card = page.locator(f"#candidate-{candidate.pk}")
    assert "Core after promotion" in card.inner_text()
    screenshot("inbox")

    card.locator("summary", has_text="Edit, then approve").click()
    edited = "Stripe webhooks: verify the signature before parsing the payload, never after"
    card.locator("textarea[name=text]").fill(edited)
    card.locator("select[name=category]").select_option("DECISION")
    card.locator("button[name=approve-edited]").click()

    # htmx swaps the card for its decided state and updates the badge out of band.
    decided = page.locator(f"#candidate-{candidate.pk} .core-lesson")
    decided.wait_for()
    assert edited in decided.inner_text()
    page.locator("header #promotions-badge", has_text="1").wait_for()
    assert page.locator("#promotions-page-count").inner_text() == "1"
    assert "Approved" in page.locator(f"#candidate-{candidate.pk}").inner_text()
    screenshot("approved")

    core = Lesson.objects.get(memory=memory, tier="core")
    assert (core.text, core.category) == (edited, "DECISION")

    # After a reload the decision is listed, and the core lesson is on the candidate's page.
    page.goto("/promotions/")
    assert page.locator("header #promotions-badge").inner_text() == "1"
    page.locator(".recent-decisions a", has_text=f"#{candidate.pk}").click()
    page.wait_for_url(f"**/promotions/{candidate.pk}/")
    assert edited in page.locator(f"#core-lesson-{core.pk}").inner_text()
    screenshot("detail")

    # The memory page lists the new lesson under Core Lessons; the nav badge there shows one left.
    page.goto(memory.get_absolute_url())
    core_section = page.locator("section.tier-core")
    assert core_section.locator("h2").inner_text().startswith("Core Lessons")
    assert edited in core_section.inner_text()
    assert "DECISION" in core_section.inner_text()
    assert edited not in (
        page.locator("section.tier-working").inner_text() if page.locator("section.tier-working").count() else ""
    )
    assert page.locator("header #promotions-badge").inner_text() == "1"
    screenshot("memory-page")
