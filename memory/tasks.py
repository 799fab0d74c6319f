"""Celery discovers tasks here; each feature keeps its own tasks module."""

from memory.compaction.tasks import *  # noqa: F401,F403
from memory.pipeline.tasks import *  # noqa: F401,F403
from memory.promotions.tasks import *  # noqa: F401,F403
from memory.refinement.tasks import *  # noqa: F401,F403
from memory.reflection.tasks import *  # noqa: F401,F403
from memory.refs.tasks import *  # noqa: F401,F403
from memory.sync.tasks import *  # noqa: F401,F403
