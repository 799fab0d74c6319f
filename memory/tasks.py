"""Celery discovers tasks here; each feature keeps its own tasks module."""

from celery import current_app, shared_task

from memory.compaction.tasks import *  # noqa: F403
from memory.conflicts.tasks import *  # noqa: F403
from memory.digest.tasks import *  # noqa: F403
from memory.pipeline.tasks import *  # noqa: F403
from memory.promotions.tasks import *  # noqa: F403
from memory.refinement.tasks import *  # noqa: F403
from memory.reflection.tasks import *  # noqa: F403
from memory.refs.tasks import *  # noqa: F403
from memory.sync.tasks import *  # noqa: F403
from memory.webhooks.tasks import *  # noqa: F403

# Names tasks had before every task was named memory.<feature>.<verb>. Nothing queues them any
# more; a message queued under one before an upgrade still runs, as the task it was renamed to.
FORMER_NAMES = {
    "memory.reflect_interaction": "memory.reflection.reflect_interaction",
    "promotions.detect": "memory.promotions.detect",
    "promotions.detect_everywhere": "memory.promotions.detect_everywhere",
    "refinement.run": "memory.refinement.run",
    "refinement.sweep": "memory.refinement.sweep",
    "refinement.nightly": "memory.refinement.nightly",
    "refs.anchor": "memory.refs.anchor",
    "refs.check": "memory.refs.check",
    "refs.check_everywhere": "memory.refs.check_everywhere",
}


def _forward(former, current):
    def run_as_renamed(*args, **kwargs):
        return current_app.tasks[current](*args, **kwargs)

    run_as_renamed.__name__ = run_as_renamed.__qualname__ = f"former_{former.replace('.', '_')}"
    return shared_task(name=former)(run_as_renamed)


for _former, _current in FORMER_NAMES.items():
    _forward(_former, _current)
