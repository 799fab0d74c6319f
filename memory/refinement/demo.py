"""Demo data for refinement: one completed run and one run the retention breaker rolled back.

Both go through the real session handler on the demo memories, so the pages show exactly what a
real run records.
"""

from django.db.models import Count, Q

from memory.engines.base import ToolCall
from memory.engines.offline import OfflineEngine
from memory.engines.recorder import CallRecorder
from memory.engines.scripted import ScriptedEngine
from memory.models import Lesson, Memory, RefinementRun
from memory.refinement.services import refinement_run_create, refinement_run_execute


def _demo_memories():
    """The two demo memories with the most core lessons (a refinement run needs core lessons)."""
    return list(
        Memory.objects.filter(persona__archived_at__isnull=True)
        .annotate(core=Count("lessons", filter=Q(lessons__tier="core", lessons__status="active")))
        .filter(core__gte=3)
        .select_related("persona", "project")
        .order_by("-core", "id")[:2]
    )


def _run(memory, engine, stdout, label):
    run = refinement_run_create(memory=memory, trigger="demo")
    run = refinement_run_execute(run_id=run.pk, engine=engine)
    stdout.write(
        f"refinement demo: {label} run #{run.pk} on {memory} ended {run.status} "
        f"({run.ops_used} change(s), retention {run.retention:.1%})\n"
    )
    return run


def seed(stdout):
    """Once: an offline run (the demo has no duplicates, so it completes with zero operations,
    which is a success), and a scripted run that tries to delete every core lesson and is stopped
    by the retention breaker with nothing changed."""
    if RefinementRun.objects.filter(trigger="demo").exists():
        stdout.write("refinement demo: runs already present\n")
        return
    memories = _demo_memories()
    if len(memories) < 2:
        stdout.write("refinement demo: no memories with core lessons; run seed_demo first\n")
        return
    tidy, attacked = memories
    _run(tidy, OfflineEngine(recorder=CallRecorder(memory=tidy)), stdout, "offline de-duplication")
    victims = Lesson.objects.filter(memory=attacked, tier="core", status="active").order_by("id")
    script = [[ToolCall(f"d{lesson.pk}", "delete", {"id": lesson.pk})] for lesson in victims] + [
        [ToolCall("end", "complete", {})]
    ]
    engine = ScriptedEngine(turns=script, completions=["YES"], recorder=CallRecorder(memory=attacked))
    _run(attacked, engine, stdout, "mass deletion")
