import pytest
from django.urls import reverse

from memory.models import RefinementRun

from .helpers import core, run_with, state
from .scripted import ScriptedEngine

pytestmark = pytest.mark.django_db


def completed_run(memory):
    lessons = [core(memory, f"Lesson {i}: nightly backup {i} goes to region {i}") for i in range(30)]
    before = state(memory)
    run = run_with(memory, ScriptedEngine([("delete", {"id": lessons[0].pk}), ("protect", {"id": lessons[1].pk})]))
    assert run.status == "completed" and run.ops_used == 2
    return run, before


def test_curator_cannot_revert(client_for, curator, memory):
    run, _ = completed_run(memory)
    assert client_for(curator).post(reverse("refinement:run-revert", args=[run.pk])).status_code == 403


def test_approver_reverts_as_one_change(client_for, approver, memory):
    run, before = completed_run(memory)
    c = client_for(approver)
    assert b"Revert this run" in c.get(reverse("refinement:run", args=[run.pk])).content
    response = c.post(reverse("refinement:run-revert", args=[run.pk]), follow=True)
    assert b"reverted as one change" in response.content
    run.refresh_from_db()
    assert run.status == RefinementRun.Status.REVERTED
    assert state(memory) == before
    again = c.post(reverse("refinement:run-revert", args=[run.pk]), follow=True)
    assert b"Only a completed run can be reverted" in again.content


def test_zero_change_run_has_nothing_to_revert(client_for, approver, memory):
    core(memory, "one")
    run = run_with(memory, ScriptedEngine([("complete", {})]))
    response = client_for(approver).post(reverse("refinement:run-revert", args=[run.pk]), follow=True)
    assert b"nothing to revert" in response.content
