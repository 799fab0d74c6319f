import io
from datetime import date

import pytest

from memory.models import PromotionCandidate
from memory.promotions import demo
from tests.factories import MemoryFactory, make_lesson

pytestmark = pytest.mark.django_db


# Each demo memory also holds lessons about other things, as a real one does: with only its three
# restatements, every word of them would count as common.
OTHER_LESSONS = [
    "Nightly exports of the analytics warehouse finish around 03:00 UTC",
    "The onboarding wizard keeps its state in local storage between steps",
    "Feature toggles are read from config/flags.yml when the app boots",
    "Grafana dashboards for the API live in the ops repository",
    "PDF invoices are rendered by a headless Chromium in the worker",
]


def test_demo_seed_leaves_pending_candidates_and_can_run_twice():
    for _ in range(3):
        memory = MemoryFactory()
        for i, text in enumerate(OTHER_LESSONS):
            make_lesson(memory, text, day=date(2025, 12, 1 + i))
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


def test_every_demo_candidate_is_small_and_meets_the_dates_rule(client_for, approver):
    from django.core.management import call_command
    from django.urls import reverse

    call_command("seed_demo", stdout=io.StringIO())
    pending = list(PromotionCandidate.objects.filter(status="pending").select_related("memory"))
    assert pending
    for candidate in pending:
        lessons = list(candidate.supporting.all())
        assert len(lessons) <= 12
        true_dates = {lesson.lesson_date for lesson in lessons} | {
            c.confirmed_on for lesson in lessons for c in lesson.confirmations.all()
        }
        assert candidate.distinct_dates == len(true_dates)
        if not candidate.from_pipeline:
            assert candidate.distinct_dates >= candidate.memory.promotion_threshold
    html = client_for(approver).get(reverse("promotions:inbox")).content.decode()
    assert "Recurring theme" not in html
