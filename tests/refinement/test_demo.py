import io

import pytest
from django.core.management import call_command

from memory.models import Lesson, RefinementRun

pytestmark = pytest.mark.django_db


def test_demo_seeds_one_completed_and_one_terminated_run_once():
    out = io.StringIO()
    call_command("seed_demo", stdout=out)  # runs the refinement demo hook on the demo memories
    statuses = sorted(RefinementRun.objects.values_list("status", flat=True))
    assert statuses == ["completed", "terminated"]
    completed = RefinementRun.objects.get(status="completed")
    assert completed.ops_used == 0  # nothing in the demo core is a duplicate: zero operations is success
    attacked = RefinementRun.objects.get(status="terminated")
    # The breaker rolled the mass deletion back: every core lesson of that memory is still active.
    assert not Lesson.objects.filter(memory=attacked.memory, tier="core").exclude(status="active").exists()
    call_command("seed_demo", stdout=out)
    assert RefinementRun.objects.count() == 2
    assert "already present" in out.getvalue()


def test_demo_runs_log_their_calls_against_the_memory():
    from memory.models import LLMCall

    call_command("seed_demo", stdout=io.StringIO())
    calls = LLMCall.objects.filter(purpose__startswith="refinement")
    assert calls.exists()
    assert not calls.filter(persona__isnull=True).exists()
