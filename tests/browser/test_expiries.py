"""A lead on a phone decides temporary lessons: a proposed expiry refused when left empty, then
accepted with an edited date; an expired lesson restored; the page never widens past 390 px and
has no serious accessibility fault."""

from datetime import timedelta

from django.contrib.auth.models import User
from django.utils import timezone
from playwright.sync_api import expect

from memory import services
from memory.conflicts.services import conflicts_detect
from memory.models import ExpiryProposal, Lesson
from tests.browser.audit import axe_violations, horizontal_overflow
from tests.browser.conftest import ARTIFACTS
from tests.factories import SYSTEM, MemoryFactory, make_lesson

PHONE = {"width": 390, "height": 844}
WORD = "skipTheEndToEndSuiteWhileTheRolloutIsPartialBecauseTheCanaryFleetIsStillOnTheOldBuild"


def _fits(page, name):
    page.screenshot(path=str(ARTIFACTS / f"phone-expiries-{name}.png"), full_page=True)
    width = page.evaluate("window.innerWidth")
    scroll = page.evaluate("document.documentElement.scrollWidth")
    assert scroll <= width, f"{name} is {scroll}px wide on a {width}px phone: {horizontal_overflow(page)}"
    assert not axe_violations(page), f"{name}: {axe_violations(page)}"


def test_a_lead_decides_expiries_on_a_phone(page, login, transactional_db):
    memory = MemoryFactory()
    lesson = make_lesson(memory, f"{WORD} until the 2.3 rollout reaches 100 %.")
    conflicts_detect(memory=memory, lesson_ids=[lesson.pk])
    proposal = ExpiryProposal.objects.get(lesson=lesson)
    expired = services.lesson_set_expiry(
        lesson=make_lesson(memory, "Use the <b>staging</b> mirror for the migration week."),
        expires_on=timezone.localdate() - timedelta(days=2),
        actor=SYSTEM,
    )
    User.objects.create_superuser("lead", "lead@example.com", "pw-for-tests-1")
    login("lead")
    page.set_viewport_size(PHONE)
    ARTIFACTS.mkdir(exist_ok=True)

    page.goto("/conflicts/")
    page.get_by_role("link", name="Expiries", exact=True).click()
    row = page.locator(f"#expiry-{proposal.pk}")
    expect(row).to_contain_text("2.3 rollout reaches 100 %")
    _fits(page, "proposals")

    # Both values emptied: refused in the row, nothing changed.
    row.get_by_label("Holds until (a condition)").fill("")
    row.get_by_role("button", name="Accept").click()
    expect(row.get_by_role("alert")).to_contain_text("needs a date or a condition")
    assert ExpiryProposal.objects.get(pk=proposal.pk).status == "pending"

    later = timezone.localdate() + timedelta(days=20)
    row.get_by_label("Expires on").fill(later.isoformat())
    row.get_by_role("button", name="Accept").click()
    expect(row).to_contain_text("Accepted")
    assert Lesson.objects.get(pk=lesson.pk).expires_on == later

    page.get_by_role("link", name="Expired lessons").click()
    expired_row = page.locator(f"#expired-{expired.pk}")
    expect(expired_row).to_contain_text("<b>staging</b>")  # shown as text, never as markup
    expect(expired_row.locator(".badge-expired")).to_be_visible()
    _fits(page, "expired")
    expired_row.get_by_role("button", name="Restore").click()
    expect(expired_row).to_contain_text("Restored: the lesson no longer expires.")
    assert not Lesson.objects.get(pk=expired.pk).is_expired

    page.goto(memory.get_absolute_url())
    expect(page.locator(f"#lesson-{expired.pk} .badge-expired")).to_have_count(0)
    expect(page.locator(f"#lesson-{lesson.pk}")).to_contain_text("Expires")
    _fits(page, "memory")
