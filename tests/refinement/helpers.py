from memory.models import Lesson
from memory.refinement.services import refinement_run_create, refinement_run_execute
from tests.factories import make_lesson


def state(memory):
    """Every lesson row of the memory (all tiers, all statuses): what 'exactly as before' compares."""
    return set(Lesson.objects.filter(memory=memory).values_list("id", "text", "tier", "status", "protected"))


def core(memory, text, **kw):
    return make_lesson(memory, text, tier="core", category=kw.pop("category", "PATTERN"), **kw)


def run_with(memory, engine, **kw):
    run = refinement_run_create(memory=memory)
    return refinement_run_execute(run_id=run.pk, engine=engine, **kw)
