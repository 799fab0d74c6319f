"""Code refs in a real browser: a stale ref shows on the home page's review count and on the memory
page; accepting a moved range updates the lesson and its history."""

from playwright.sync_api import expect

from memory.refs.scratch import ScratchRepo, numbered_source
from memory.refs.services import refs_check_project
from tests.factories import MemoryFactory, PersonaFactory, ProjectFactory, make_lesson


def _drifted_memory(tmp_path):
    repo = ScratchRepo(tmp_path / "checkout")
    repo.write("src/auth/middleware.py", numbered_source("auth", 40))
    repo.write("src/billing/invoice.py", numbered_source("invoice", 40))
    repo.commit("first")
    project = ProjectFactory(name="Shop", checkout_path=str(repo.path))
    memory = MemoryFactory(persona=PersonaFactory(name="Ada"), project=project)
    # Committed writes (transactional test database): anchored at write time.
    moved = make_lesson(memory, "The session is read before routing", refs="src/auth/middleware.py#L10-L12")
    stale = make_lesson(memory, "Invoices round half up", refs="src/billing/invoice.py#L4")
    make_lesson(memory, "Step thirty closes the invoice", refs="src/billing/invoice.py#L30")
    repo.insert_lines("src/auth/middleware.py", 1, ["# a new first line", "import os"])
    repo.replace_line("src/billing/invoice.py", 4, "rounding = 'bankers'")
    repo.commit("drift")
    refs_check_project(project=project)
    return memory, moved, stale


def test_stale_refs_wait_for_review_and_a_move_is_accepted(page, login, make_user, screenshot, tmp_path):
    memory, moved, stale = _drifted_memory(tmp_path)
    make_user("cur", role="curator")
    login("cur")

    page.goto("/")
    expect(page.locator("#memory-list")).to_contain_text("2 refs to review")
    screenshot("home")

    page.goto(f"/memories/{memory.pk}/")
    expect(page.locator("#refs-panel")).to_contain_text("2 refs need review")
    stale_ref = page.locator(f"#lesson-{stale.pk} .ref-item")
    expect(stale_ref).to_have_attribute("data-ref-status", "changed")
    expect(stale_ref).to_contain_text("stale: changed")
    expect(stale_ref.get_by_role("button", name="Drop ref")).to_be_visible()
    expect(stale_ref.get_by_role("button", name="Retire lesson")).to_be_visible()
    moved_ref = page.locator(f"#lesson-{moved.pk} .ref-item")
    expect(moved_ref).to_contain_text("moved → src/auth/middleware.py#L12-L14")
    page.select_option("#f-refs", "review")  # htmx swaps the list on change
    expect(page.locator("article.lesson")).to_have_count(2)
    screenshot("memory")

    moved_ref.get_by_role("button", name="Accept src/auth/middleware.py#L12-L14").click()
    row = page.locator(f"#lesson-{moved.pk}")
    expect(row.locator(".ref")).to_have_text("src/auth/middleware.py#L12-L14")
    expect(row.locator(".ref-item")).to_have_attribute("data-ref-status", "valid")
    assert [r.as_text() for r in moved.refs.all()] == ["src/auth/middleware.py#L12-L14"]
    screenshot("accepted")

    row.get_by_role("link", name="History & provenance").click()
    expect(page.locator("main")).to_contain_text("src/auth/middleware.py#L10-L12")
    expect(page.locator("main")).to_contain_text("src/auth/middleware.py#L12-L14")
    expect(page.locator("main")).to_contain_text("Accepted moved code reference")
    screenshot("history")
