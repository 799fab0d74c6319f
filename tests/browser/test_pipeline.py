"""Run the observation pipeline from the dashboard on demo data and follow it to the end."""

from playwright.sync_api import expect

from memory.demo.seed import seed_demo
from memory.models import Memory, PipelineRun


def test_run_pipeline_from_the_memory_page_on_demo_data(page, login, make_user, screenshot):
    seed_demo()
    memory = Memory.objects.get(persona__name="Noor", project__slug="tidewater-etl")
    make_user("lead", role="approver")
    login("lead")
    page.goto(memory.get_absolute_url())
    page.get_by_test_id("memory-run-pipeline").click()
    expect(page.locator("#pl-interaction")).to_be_visible()
    page.locator("#pl-interaction").select_option(
        label=page.locator("#pl-interaction option", has_text="schema drift").inner_text()
    )
    screenshot("pipeline-start")
    page.get_by_test_id("run-pipeline").click()
    run = PipelineRun.objects.order_by("-id").first()
    expect(page).to_have_url(f"{page.url.split('/pipeline/')[0]}/pipeline/runs/{run.pk}/")
    for phase in ("observer", "reflector"):
        expect(page.locator(f'[data-phase="{phase}"]')).to_have_attribute("data-state", "done")
    expect(page.get_by_test_id("run-status")).to_have_text("Completed")
    # Working memory stays under its budget, so the pruner had nothing to do and says so.
    expect(page.locator('[data-phase="pruner"]')).to_have_attribute("data-state", "skipped")
    expect(page.get_by_test_id("pruner-skipped")).to_contain_text("within its token budget")
    expect(page.locator("#created-obs-h")).to_contain_text("4")
    expect(page.get_by_test_id("histogram")).to_contain_text("critical")
    run.refresh_from_db()
    assert run.observations_added == 4
    screenshot("pipeline-run-done")
    page.goto(memory.get_absolute_url() + "?tier=working")
    expect(page.locator("[data-coverage]").first).to_be_visible()
    screenshot("pipeline-coverage-tags")


def test_progress_page_follows_a_running_run_until_it_completes(page, login, make_user, screenshot):
    seed_demo()
    memory = Memory.objects.get(persona__name="Noor", project__slug="tidewater-etl")
    run = PipelineRun.objects.create(
        memory=memory,
        phase="reflector",
        completed_phases=["observer"],
        pass_no=1,
        max_passes=2,
        tool_calls=2,
        observations_added=4,
        reflections_added=1,
        starting_reflections=3,
        starting_observations=10,
    )
    make_user("watcher", role="viewer")
    login("watcher")
    page.goto(f"/pipeline/runs/{run.pk}/")
    expect(page.locator('[data-phase="reflector"]')).to_have_attribute("data-state", "current")
    expect(page.get_by_test_id("pass")).to_have_text("pass 1 of 2")
    screenshot("pipeline-running")
    PipelineRun.objects.filter(pk=run.pk).update(
        phase="pruner",
        completed_phases=["observer", "reflector"],
        pass_no=1,
        max_passes=2,
        tool_calls=3,
        observations_dropped=2,
    )
    expect(page.locator('[data-phase="pruner"]')).to_have_attribute("data-state", "current")
    expect(page.get_by_test_id("deltas")).to_have_text("4 reflections (1 new) · 8 observations left (2 dropped)")
    PipelineRun.objects.filter(pk=run.pk).update(
        status="completed", completed_phases=["observer", "reflector", "pruner"]
    )
    expect(page.locator('[data-phase="pruner"]')).to_have_attribute("data-state", "done")
    expect(page.get_by_test_id("run-status")).to_have_text("Completed")
    assert page.locator("#run-body[hx-trigger]").count() == 0  # polling stopped
