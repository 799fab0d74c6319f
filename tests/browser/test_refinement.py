"""Edit a refinement prompt with live preview, start a run, watch it progress, open its operations."""

import re

from playwright.sync_api import expect

from memory.models import RefinementRun
from memory.refinement import tasks
from memory.refinement.services import refinement_run_execute
from tests.factories import MemoryFactory, PersonaFactory, ProjectFactory
from tests.refinement.helpers import core
from tests.refinement.scripted import ScriptedEngine


def test_prompt_preview_run_progress_and_operations(page, login, make_user, screenshot, monkeypatch):
    make_user("lead", role="approver")
    memory = MemoryFactory(
        persona=PersonaFactory(name="Wing", role="Site Reliability"),
        project=ProjectFactory(name="Checkout", slug="checkout"),
    )
    lessons = [
        core(memory, f"Service {i} keeps its retry budget in config/retry_{i}.toml and pages after {i + 3} failures")
        for i in range(24)
    ]
    dup_a = core(memory, "Never deploy on Fridays after 15:00; the on-call rotation changes at 16:00")
    dup_b = core(memory, "Never deploy on Fridays after 15:00, the on-call rotation changes at 16:00")
    guarded = core(memory, "The vow: we never ship without a rollback plan", protected=True)

    queued = []
    monkeypatch.setattr(tasks.refinement_run_task, "delay", lambda run_id: queued.append(run_id))

    login("lead")
    page.goto("/refinement/")
    expect(page.get_by_role("heading", name="Refinement", exact=True)).to_be_visible()
    page.get_by_role("link", name="Prompt").first.click()
    expect(page.get_by_role("heading", name="Refinement prompt for Wing")).to_be_visible()
    preview = page.get_by_test_id("preview")
    expect(preview).to_contain_text("Only de-duplicate.")
    expect(preview).to_contain_text(f"id {dup_a.pk} [PATTERN]")
    page.get_by_label("Guidance for this agent").fill(
        "Wing's memories are operational: merge only word-for-word duplicates."
    )
    expect(preview).to_contain_text("Wing's memories are operational")
    expect(preview).not_to_contain_text("Only de-duplicate.")
    screenshot("prompt-preview")
    page.get_by_role("button", name="Save new version").click()
    expect(page.locator(".messages")).to_contain_text("Saved version 1")
    expect(page.get_by_role("table").filter(has_text="v1")).to_contain_text("lead")

    page.goto("/refinement/")
    page.get_by_role("button", name="Run now").click()
    page.wait_for_url(re.compile(r"/refinement/runs/\d+/$"))
    expect(page.get_by_test_id("run-status")).to_have_text("Running")
    expect(page.get_by_test_id("ops-used")).to_have_text("0 / 10")
    assert len(queued) == 1

    seen = []

    def watch(call, result):
        # The worker committed this operation; the page must show it by polling, without a reload.
        run = RefinementRun.objects.get(pk=queued[0])
        expect(page.get_by_test_id("ops-used")).to_have_text(f"{run.ops_used} / 10")
        expect(page.get_by_test_id("current-action")).to_contain_text(f"#{len(seen) + 1} {call.name}")
        seen.append(call.name)
        if len(seen) == 3:
            screenshot("run-progress")

    engine = ScriptedEngine(
        [
            ("search", {"query": "Fridays"}),
            (
                "consolidate",
                {
                    "ids": [dup_a.pk, dup_b.pk],
                    "text": "Never deploy on Fridays after 15:00; the on-call rotation changes at 16:00",
                },
            ),
            (
                "update",
                {
                    "id": lessons[0].pk,
                    "text": "Service 0 keeps its retry budget in config/retry_0.toml; pages after 3 failures",
                },
            ),
            ("delete", {"id": guarded.pk}),
            ("complete", {"summary": "one duplicate merged"}),
        ],
        after_call=watch,
    )
    run = refinement_run_execute(run_id=queued[0], engine=engine)
    assert run.status == "completed" and seen == ["search", "consolidate", "update", "delete", "complete"]

    expect(page.get_by_test_id("run-status")).to_have_text("Completed")
    expect(page.get_by_role("heading", name=re.compile(r"Operations \(5\)"))).to_be_visible()
    refused = page.locator("#op-4")
    expect(refused).to_contain_text("Refused")
    expect(refused).to_contain_text("protected")
    refused.locator("summary").click()
    update = page.locator("#op-3")
    expect(update.locator("ins").first).to_have_text("config/retry_0.toml;")
    expect(update.locator("del").first).to_have_text("config/retry_0.toml and")
    expect(page.get_by_role("button", name="Revert this run")).to_be_visible()
    screenshot("run-operations")

    page.goto("/refinement/")
    page.get_by_role("link", name=re.compile(r"^Completed")).click()
    expect(page.locator("#runs-table tbody tr")).to_have_count(1)
    expect(page.locator("#runs-table")).to_contain_text("Wing × Checkout")
    screenshot("runs-list")
