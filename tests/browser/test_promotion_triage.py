"""Keyboard triage of the promotion inbox in a real browser: bulk approve and bulk reject with the
keyboard alone, and two leads in two browsers deciding overlapping selections at once."""

import re
from datetime import date

from playwright.sync_api import expect

from memory.models import Lesson, PromotionBulkDecision, PromotionCandidate
from memory.promotions.services import promotion_detect
from tests.conftest import race_needs_postgres
from tests.factories import MemoryFactory, make_lesson
from tests.promotions.conftest import THEME


def _pending(n):
    """n pending candidates, each in its own memory; oldest (first shown) first."""
    made = []
    for i in range(n):
        memory = MemoryFactory(persona__name=f"Persona {i}", project__name=f"Project {i}")
        for d, (text, ref) in enumerate(THEME):
            make_lesson(memory, text, refs=ref, day=date(2026, 1, 1 + d))
        made.extend(promotion_detect(memory=memory).created)
    return made


def _focused_card(page):
    return page.evaluate("document.activeElement.closest('article.promotion')?.id || ''")


def _live(page):
    return page.locator("#triage-status")


def test_bulk_approve_and_bulk_reject_with_the_keyboard_alone(page, login, make_user, screenshot):
    cands = _pending(5)
    make_user("lead", role="approver")
    login("lead")
    page.goto("/promotions/")

    page.keyboard.press("?")
    assert page.locator("#keys-help").evaluate("el => el.open")
    page.keyboard.press("?")

    # Selection helpers: every card shown, none, every card shown of one memory (X on a card).
    page.get_by_role("button", name="Select all shown", exact=True).click()
    assert page.locator("#selected-count").inner_text() == "5"
    expect(_live(page)).to_contain_text("5 candidates selected")
    page.get_by_role("button", name="Clear selection").click()
    assert page.locator("#selected-count").inner_text() == "0"
    page.keyboard.press("j")
    page.keyboard.press("X")
    assert page.locator("#selected-count").inner_text() == "1"  # one candidate per memory here
    expect(_live(page)).to_contain_text("1 candidate of this memory selected")
    page.keyboard.press("x")
    assert page.locator("#selected-count").inner_text() == "0"
    page.locator("#keys-help summary").focus()
    page.keyboard.press("Escape")
    page.evaluate("document.activeElement.blur()")

    # j moves to the first card, then the next; the focused card is the one shown with an outline.
    page.keyboard.press("j")
    assert _focused_card(page) == f"candidate-{cands[0].pk}"
    outline = page.evaluate("getComputedStyle(document.activeElement).outlineStyle")
    assert outline not in ("", "none")
    page.keyboard.press("x")
    expect(_live(page)).to_contain_text("1 selected")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("x")
    assert page.locator("#selected-count").inner_text() == "2"
    expect(_live(page)).to_contain_text("2 selected")
    screenshot("selected")

    page.keyboard.press("a")
    result = page.locator("#bulk-result")
    result.get_by_text("Approved 2 of 2").wait_for()
    assert result.get_attribute("aria-live") == "polite"
    assert f"#{cands[0].pk}" in result.inner_text() and f"#{cands[1].pk}" in result.inner_text()
    # The cards show their new state; the focus stays on the card it was on.
    page.locator(f"#candidate-{cands[1].pk} .badge-approved").wait_for()
    expect(page.locator(f"#candidate-{cands[1].pk}")).to_be_focused()
    assert page.locator("#selected-count").inner_text() == "0"

    # Keys typed in a text field stay text: nothing is selected or decided.
    page.keyboard.press("j")
    assert _focused_card(page) == f"candidate-{cands[2].pk}"
    page.keyboard.press("x")
    page.keyboard.press("j")
    page.keyboard.press("x")
    page.keyboard.press("r")
    assert page.evaluate("document.activeElement.id") == "bulk-reason"
    page.keyboard.type("Only true of the jax spike: not a rule")
    assert page.locator("#selected-count").inner_text() == "2"
    assert page.locator("#bulk-reason").input_value() == "Only true of the jax spike: not a rule"
    page.keyboard.press("Enter")
    result.get_by_text("Rejected 2 of 2").wait_for()
    screenshot("rejected")

    statuses = dict(PromotionCandidate.objects.values_list("pk", "status"))
    assert [statuses[c.pk] for c in cands] == ["approved", "approved", "rejected", "rejected", "pending"]
    assert set(PromotionCandidate.objects.filter(status="rejected").values_list("reason", flat=True)) == {
        "Only true of the jax spike: not a rule"
    }
    assert PromotionBulkDecision.objects.count() == 2
    assert Lesson.objects.filter(tier="core").count() == 2

    # e opens edit-then-approve on the focused card and puts the cursor in its text.
    page.keyboard.press("Escape")
    page.keyboard.press("j")
    assert _focused_card(page) == f"candidate-{cands[4].pk}"
    page.keyboard.press("e")
    assert page.evaluate("document.activeElement.name") == "text"
    page.keyboard.press("Escape")
    assert _focused_card(page) == f"candidate-{cands[4].pk}"
    # o opens the supporting lessons, loaded on demand.
    page.keyboard.press("o")
    page.locator(f"#candidate-{cands[4].pk} .supporting-body table").wait_for()
    assert "2026-01-02" in page.locator(f"#candidate-{cands[4].pk} .supporting-body").inner_text()

    # On a phone the bar and the cards fit the width.
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto("/promotions/")
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    page.locator("article.promotion").first.scroll_into_view_if_needed()
    page.screenshot(path=str(screenshot("unused").parent / "triage-phone.png"))


def _login(page, username):
    page.goto("/accounts/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", "pw-for-tests-1")
    page.click("button[type=submit]")
    page.wait_for_url(lambda url: "/accounts/login/" not in url)


def test_two_leads_in_two_browsers_decide_overlapping_selections(chromium, live_server, make_user, screenshot, page):
    race_needs_postgres()
    cands = _pending(6)
    make_user("alice", role="approver")
    make_user("bob", role="approver")
    selections = {"alice": cands[:4], "bob": cands[2:]}
    pages = {}
    contexts = []
    for name in ("alice", "bob"):
        context = chromium.new_context(base_url=live_server.url, viewport={"width": 1200, "height": 900})
        contexts.append(context)
        pg = context.new_page()
        pg.set_default_timeout(20_000)
        _login(pg, name)
        pg.goto("/promotions/")
        for candidate in selections[name]:
            pg.locator(f"#select-{candidate.pk}").check()
        pages[name] = pg
    try:
        # Both press "a" before either answer comes back.
        pages["alice"].keyboard.press("a")
        pages["bob"].keyboard.press("a")
        for pg in pages.values():
            pg.locator("#bulk-result").get_by_text(re.compile(r"Approved \d of 4")).wait_for()

        rows = {
            pk: (status, by)
            for pk, status, by in PromotionCandidate.objects.values_list("pk", "status", "decided_by_label")
        }
        assert {status for status, _ in rows.values()} == {"approved"}  # every candidate decided
        assert Lesson.objects.filter(tier="core").count() == 6  # and each exactly once
        for name, other in (("alice", "bob"), ("bob", "alice")):
            text = pages[name].locator("#bulk-result").inner_text()
            mine = [c.pk for c in selections[name] if rows[c.pk][1] == name]
            theirs = [c.pk for c in selections[name] if rows[c.pk][1] == other]
            assert f"Approved {len(mine)} of 4" in text
            if theirs:
                told = ", ".join(f"#{pk} (approved by {other})" for pk in theirs)
                assert f"Already decided by someone else: {told}." in text
            else:
                assert "Already decided" not in text
        assert sum(len(o["decided"]) for o in PromotionBulkDecision.objects.values_list("outcome", flat=True)) == 6
        pages["bob"].screenshot(path=str(screenshot("unused").parent / "race-bob.png"), full_page=True)
    finally:
        for context in contexts:
            context.close()
