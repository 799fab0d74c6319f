from io import StringIO

from memory.demo.seed import seed_demo
from memory.models import Interaction, PipelineRun


def test_seed_demo_creates_one_completed_run_and_is_idempotent(db):
    out = StringIO()
    seed_demo(out)
    seed_demo(StringIO())
    run = PipelineRun.objects.get()
    assert run.status == "completed" and run.observations_added >= 4
    assert "Pipeline: run" in out.getvalue()
    assert Interaction.objects.filter(trigger_type__startswith="pipeline demo").count() == 2
