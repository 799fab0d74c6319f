import pytest

from memory.engines.offline import OfflineEngine
from memory.models import Lesson, RefinementOperation, RefinementRun
from memory.refinement.services import refinement_run_create, refinement_run_execute

from .helpers import core, state

pytestmark = pytest.mark.django_db


def run_offline(memory):
    run = refinement_run_create(memory=memory)
    return refinement_run_execute(run_id=run.pk, engine=OfflineEngine())


def test_offline_merges_exact_and_near_duplicates_only(memory):
    a = core(memory, "Always pin the Node version in .nvmrc for the web app")
    b = core(memory, "always pin the node version in .nvmrc for the web app.")  # exact after normalising
    c = core(memory, "Always pin the Node version in the .nvmrc for the web app")  # near duplicate
    d = core(memory, "Pin the Python version in .python-version for the API")  # similar topic, not a duplicate
    e = core(memory, "Always pin the Node version in .nvmrc for the web app", protected=True)  # protected: left alone
    fillers = [
        core(memory, f"Distinct lesson {i}: queue {i} drains into the archive bucket at midnight") for i in range(25)
    ]
    run = run_offline(memory)
    assert run.status == RefinementRun.Status.COMPLETED, run.error
    assert run.engine == "offline" and run.consent_answer.startswith("YES")
    assert run.ops_used == 1
    for lesson in (a, b, c):
        lesson.refresh_from_db()
        assert lesson.status == "superseded"
    merged = a.superseded_by
    assert merged.status == "active" and merged.tier == "core"
    assert set(merged.derived_from.values_list("pk", flat=True)) == {a.pk, b.pk, c.pk}
    d.refresh_from_db(), e.refresh_from_db()
    assert d.status == e.status == "active"
    assert all(Lesson.objects.get(pk=f.pk).status == "active" for f in fillers)


def test_offline_is_subject_to_the_breaker(memory):
    # Exact duplicates merge without loss (retention counts the text a merge keeps), so the breaker
    # is shown at a 100% threshold with near-duplicates: the kept wording drops a word of the other.
    memory.persona.refinement_threshold = 1.0
    memory.persona.save()
    lessons = [
        core(memory, "Feature flags are removed within two sprints of full rollout"),
        core(memory, "Feature flags are removed within two sprints after full rollout"),
    ]
    before = state(memory)
    run = run_offline(memory)
    assert run.operations.filter(action="consolidate", outcome="rolled_back").exists()
    assert run.status == RefinementRun.Status.TERMINATED
    assert state(memory) == before
    assert lessons


def test_offline_is_subject_to_the_cap(memory):
    for i in range(13):
        for _ in range(2):
            core(memory, f"Group {i:02d} rule: service {chr(65 + i)} retries three times then gives up and pages")
    for i in range(200):
        core(memory, f"Unrelated {i}: the {i}th dashboard tile shows the p95 latency for region {i}")
    run = run_offline(memory)
    assert run.status == RefinementRun.Status.COMPLETED, run.error
    assert run.ops_used == 10
    refused = run.operations.filter(outcome=RefinementOperation.Outcome.REFUSED)
    assert refused.count() == 1 and "cap of 10" in refused.get().refusal_reason
    assert run.operations.last().action == "complete"
