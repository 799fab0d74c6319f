"""Every main page in Chromium, on a desktop and on a phone: it fits, it is quiet, it is accessible.

One seeded product (the demo data, built through the services) and one browser page are reused
for every page and both sizes, so the whole tour costs one seed.
"""

import pytest
from django.contrib.auth.models import User
from django.contrib.sessions.models import Session
from playwright.sync_api import expect

from memory.demo.seed import seed_demo
from memory.models import (
    ChangeBatch,
    CompactionProposal,
    Lesson,
    Memory,
    PipelineRun,
    PromotionCandidate,
    RefinementRun,
)
from personas.models import Persona
from tests.browser.audit import PageWatch, axe_violations, horizontal_overflow
from tests.browser.conftest import ARTIFACTS

DESKTOP = {"width": 1400, "height": 900}
PHONE = {"width": 390, "height": 844}


class _Quiet:
    def write(self, *args, **kwargs):
        pass


def _main_pages():
    """(name, url) of every main page, on the demo data."""
    felix = Memory.objects.get(persona__name="Felix", project__slug="storefront-api")
    terminated = RefinementRun.objects.filter(status=RefinementRun.Status.TERMINATED).first()
    return [
        ("home", "/"),
        ("memory", felix.get_absolute_url()),
        ("history", felix.history_url()),
        ("promotions-inbox", "/promotions/"),
        ("promotion-card", f"/promotions/{PromotionCandidate.objects.filter(status='pending').first().pk}/"),
        ("compaction-review", f"/compactions/{CompactionProposal.objects.filter(status='pending').first().pk}/"),
        ("refinement-prompt", f"/refinement/personas/{terminated.memory.persona_id}/prompt/"),
        ("refinement-run", f"/refinement/runs/{terminated.pk}/"),
        ("pipeline-run", f"/pipeline/runs/{PipelineRun.objects.first().pk}/"),
        ("admin-persona", f"/admin/personas/persona/{Persona.objects.get(name='Felix').pk}/change/"),
        ("account", "/account/"),
    ]


def _organisation_tree():
    """At least 9 personas × 7 projects in two teams, with combinations that have no memory: the home
    page of an organisation, not of a demo."""
    from memory import services
    from personas.models import Project, Team

    for n in range(Persona.objects.count(), 9):
        Persona.objects.create(name=f"Agent {n + 1}", role="Reviewer")
    for n in range(Project.objects.count(), 7):
        Project.objects.create(slug=f"service-{n + 1}", name=f"Service {n + 1}")
    platform, web = Team.objects.create(name="Platform", slug="platform"), Team.objects.create(name="Web", slug="web")
    for i, project in enumerate(Project.objects.order_by("id")):
        project.team = platform if i % 2 else web
        project.save(update_fields=["team"])
    for i, persona in enumerate(Persona.objects.order_by("id")):
        for j, project in enumerate(Project.objects.order_by("id")):
            if (i + j) % 3 == 0:
                services.memory_get_or_create(persona=persona, project=project)


@pytest.fixture
def demo(transactional_db):
    seed_demo(_Quiet())
    _organisation_tree()
    User.objects.create_superuser("boss", "boss@example.com", "pw-for-tests-1")


def _tab_to(page, locator, limit=400):
    """Press Tab until the element has focus: proves it is reachable from the keyboard."""
    target = locator.element_handle()
    for _ in range(limit):
        page.keyboard.press("Tab")
        if page.evaluate("el => el === document.activeElement", target):
            return
    pytest.fail(f"{locator} was not reached with {limit} presses of Tab")


def test_every_main_page_fits_is_quiet_and_accessible(page, login, demo):
    watch = PageWatch(page)
    login("boss")
    ARTIFACTS.mkdir(exist_ok=True)
    problems = []
    for viewport in (DESKTOP, PHONE):
        page.set_viewport_size(viewport)
        for name, url in _main_pages():
            page.goto(url)
            page.wait_for_load_state("networkidle")
            where = f"{name} at {viewport['width']}px ({url})"
            overflow = horizontal_overflow(page)
            if overflow["over"] > 0:
                problems.append(f"{where}: page is {overflow['over']}px too wide: {overflow['culprits']}")
            problems += [f"{where}: {line}" for line in watch.take()]
            problems += [f"{where}: axe {line}" for line in axe_violations(page)]
            if viewport is PHONE:
                page.screenshot(path=str(ARTIFACTS / f"phone-{name}.png"), full_page=True)
    assert not problems, "\n".join(problems)


def test_phone_menu_opens_with_and_without_javascript(page, chromium, live_server, login, demo):
    page.set_viewport_size(PHONE)
    login("boss")
    nav = page.get_by_role("navigation", name="Main")
    expect(nav).to_be_hidden()  # closed on a phone: the page starts with its content
    toggle = page.locator("summary.menu-toggle")
    expect(toggle).to_contain_text("Menu")
    toggle.click()
    expect(nav).to_be_visible()
    page.keyboard.press("Escape")
    expect(nav).to_be_hidden()
    expect(toggle).to_be_focused()
    toggle.focus()
    page.keyboard.press("Enter")
    nav.get_by_role("link", name="Promotions").click()
    page.wait_for_url("**/promotions/")

    # Without JavaScript the same <details> menu works: open as served, closed with a tap.
    context = chromium.new_context(
        base_url=live_server.url, viewport=PHONE, java_script_enabled=False, storage_state=page.context.storage_state()
    )
    try:
        bare = context.new_page()
        bare.goto("/")
        bare_nav = bare.get_by_role("navigation", name="Main")
        expect(bare_nav).to_be_visible()
        bare.locator("summary.menu-toggle").click()
        expect(bare_nav).to_be_hidden()
        bare.locator("summary.menu-toggle").click()
        bare_nav.get_by_role("link", name="Compactions").click()
        bare.wait_for_url("**/compactions/")
        assert bare.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    finally:
        context.close()


def test_approve_reject_apply_and_revert_with_the_keyboard_alone(page, login, demo):
    login("boss")
    pending = list(PromotionCandidate.objects.filter(status="pending").order_by("pk")[:2])
    first, second = pending
    page.goto(f"/promotions/{first.pk}/")
    _tab_to(page, page.get_by_role("button", name="Approve", exact=True))
    page.keyboard.press("Enter")
    expect(page.locator(f"#candidate-{first.pk}")).to_contain_text("Approved")
    assert PromotionCandidate.objects.get(pk=first.pk).status == "approved"

    page.goto(f"/promotions/{second.pk}/")
    _tab_to(page, page.get_by_label("Reason for rejecting"))
    page.keyboard.type("Already covered by a core lesson")
    page.keyboard.press("Tab")  # to the Reject button
    page.keyboard.press("Enter")
    expect(page.locator(f"#candidate-{second.pk}")).to_contain_text("Rejected")
    assert PromotionCandidate.objects.get(pk=second.pk).reason == "Already covered by a core lesson"

    proposal = CompactionProposal.objects.filter(status="pending").first()
    page.goto(f"/compactions/{proposal.pk}/")
    _tab_to(page, page.get_by_role("button", name="Approve and apply"), limit=1500)
    page.keyboard.press("Enter")
    expect(page.locator("#proposal-status")).to_have_text("Applied")
    _tab_to(page, page.get_by_role("button", name="Revert this compaction"), limit=1500)
    page.keyboard.press("Enter")
    expect(page.locator("#proposal-status")).to_have_text("Reverted")


def test_expired_session_then_approve_logs_in_and_returns_to_the_inbox(page, login, make_user, demo):
    make_user("lead", role="approver")
    login("lead")
    candidate = PromotionCandidate.objects.filter(status="pending").order_by("pk").first()
    approvals = ChangeBatch.objects.filter(memory=candidate.memory, kind=ChangeBatch.Kind.PROMOTION)
    approvals_before = approvals.count()
    page.goto("/promotions/")
    card = page.locator(f"#candidate-{candidate.pk}")
    Session.objects.all().delete()  # the session expires on the server while the page stays open

    card.get_by_role("button", name="Approve", exact=True).click()
    page.wait_for_url("**/accounts/login/?next=%2Fpromotions%2F")
    expect(page.locator(".promotion")).to_have_count(0)  # the whole page, not a login form inside the card
    assert PromotionCandidate.objects.get(pk=candidate.pk).status == "pending"

    page.fill("#id_username", "lead")
    page.fill("#id_password", "pw-for-tests-1")
    page.click("button[type=submit]")
    page.wait_for_url(lambda url: url.endswith("/promotions/"))
    card = page.locator(f"#candidate-{candidate.pk}")
    expect(card).to_contain_text("Pending")
    assert PromotionCandidate.objects.get(pk=candidate.pk).status == "pending"  # nothing was replayed

    card.get_by_role("button", name="Approve", exact=True).click()
    expect(card).to_contain_text("Approved")
    assert approvals.count() == approvals_before + 1
    assert Lesson.objects.filter(memory=candidate.memory, tier="core", text=candidate.text).count() == 1
