"""Starting runs: "Run now" from the page and the nightly schedule."""

from django.db import transaction

from memory.jobs import enqueue_on_commit
from memory.models import Lesson, LessonStatus, Memory, Tier
from memory.refinement.services import RefinementBusy, refinement_run_create


def refinement_start(*, memory, user=None, trigger="manual"):
    """Open a run and enqueue its execution once the run record is committed."""
    run = refinement_run_create(memory=memory, trigger=trigger, user=user)
    enqueue_on_commit("memory.refinement.run", run.pk)
    return run


def nightly_memories():
    """Memories of active, unarchived personas that have active core lessons."""
    with_core = Lesson.objects.filter(tier=Tier.CORE, status=LessonStatus.ACTIVE).values("memory_id")
    return (
        Memory.objects.filter(
            persona__is_active=True,
            persona__archived_at__isnull=True,
            pk__in=with_core,
        )
        .select_related("persona")
        .order_by("pk")
    )


def refinement_schedule_nightly():
    started = []
    for memory in nightly_memories():
        try:
            with transaction.atomic():
                started.append(refinement_start(memory=memory, trigger="nightly").pk)
        except RefinementBusy:
            continue
    return started
