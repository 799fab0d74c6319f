from datetime import date, timedelta

import time_machine
from django.utils import timezone

from memory.compaction.services import compaction_propose
from memory.models import PipelineRun, PromotionCandidate
from memory.promotions.services import promotion_detect
from tests.factories import SYSTEM, make_lesson


def waiting_work(memory, *, compaction_days_ago=10, run_days_ago=2):
    """A pending promotion (now), a pending compaction and a failed pipeline run, made through the
    product's services where there is one, each waiting since a known time."""
    for day in (1, 2, 3):
        make_lesson(
            memory,
            "Refresh tokens skip the expiry check in the auth middleware",
            refs="src/auth/middleware.ts#L23-L30",
            day=date(2026, 1, day),
        )
    promotion_detect(memory=memory)
    with time_machine.travel(timezone.now() - timedelta(days=compaction_days_ago), tick=False):
        proposal = compaction_propose(memory=memory, actor=SYSTEM)
    failed_at = timezone.now() - timedelta(days=run_days_ago)
    run = PipelineRun.objects.create(
        memory=memory,
        status=PipelineRun.Status.FAILED,
        created_at=failed_at,
        finished_at=failed_at,
        error="The model answered without a tool call.",
    )
    candidate = PromotionCandidate.objects.get(memory=memory, status="pending")
    return candidate, proposal, run
