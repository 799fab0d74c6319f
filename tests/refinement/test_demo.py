import io

import pytest

from memory.models import RefinementRun
from memory.refinement import demo

pytestmark = pytest.mark.django_db


def test_demo_seeds_one_completed_and_one_terminated_run_once():
    out = io.StringIO()
    demo.seed(out)
    statuses = sorted(RefinementRun.objects.values_list("status", flat=True))
    assert statuses == ["completed", "terminated"]
    completed = RefinementRun.objects.get(status="completed")
    assert completed.ops_used == 1 and completed.batch is not None
    demo.seed(out)
    assert RefinementRun.objects.count() == 2
    assert "already present" in out.getvalue()
