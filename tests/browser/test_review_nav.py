"""The nav says what its number counts without hovering: "2 to review", a link to the review queue,
on a wide screen and in the phone's menu, apart from the Memories link."""

from django.contrib.auth.models import User
from playwright.sync_api import expect

from tests.browser.conftest import ARTIFACTS
from tests.promotions.conftest import pending_candidates


def test_the_review_count_reads_as_what_waits_on_desktop_and_phone(page, login, transactional_db):
    pending_candidates(2)
    User.objects.create_superuser("boss", "boss@example.com", "pw-for-tests-1")
    login("boss")
    page.goto("/promotions/")
    nav = page.get_by_role("navigation", name="Main")
    expect(nav.get_by_role("link", name="Memories", exact=True)).to_be_visible()
    review = nav.get_by_role("link", name="2 to review", exact=True)
    expect(review).to_be_visible()
    page.locator("header.topbar").screenshot(path=str(ARTIFACTS / "desktop-topbar-review-count.png"))
    review.click()
    page.wait_for_url("**/#review-heading")

    page.set_viewport_size({"width": 390, "height": 844})
    page.goto("/promotions/")
    toggle = page.locator("summary.menu-toggle")
    expect(toggle).to_have_text("Menu 2 to review")
    assert toggle.get_by_text("to review").is_visible()  # on the closed menu, not only in a tooltip
    toggle.click()
    expect(page.get_by_role("navigation", name="Main").get_by_role("link", name="2 to review")).to_be_visible()
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    page.locator("header.topbar").screenshot(path=str(ARTIFACTS / "phone-topbar-review-count.png"))
