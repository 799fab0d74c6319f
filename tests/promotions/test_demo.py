import io

import pytest

from memory.models import PromotionCandidate
from memory.promotions import demo
from tests.factories import MemoryFactory

pytestmark = pytest.mark.django_db


def test_demo_seed_leaves_pending_candidates_and_can_run_twice():
    for _ in range(3):
        MemoryFactory()
    out = io.StringIO()
    demo.seed(out)
    assert PromotionCandidate.objects.filter(status="pending").count() == 3
    assert "3 pending review" in out.getvalue()
    demo.seed(out)
    assert PromotionCandidate.objects.count() == 3


def test_demo_seed_without_memories_says_so():
    out = io.StringIO()
    demo.seed(out)
    assert "no memories" in out.getvalue()
