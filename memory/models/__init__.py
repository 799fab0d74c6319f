from memory.compaction.models import *  # noqa: F403
from memory.conflicts.models import *  # noqa: F403
from memory.digest.models import *  # noqa: F403
from memory.formats.models import *  # noqa: F403
from memory.pipeline.models import *  # noqa: F403
from memory.promotions.models import *  # noqa: F403
from memory.refinement.models import *  # noqa: F403
from memory.refs.models import *  # noqa: F403
from memory.sso.models import *  # noqa: F403
from memory.sync.models import *  # noqa: F403
from memory.webhooks.models import *  # noqa: F403

from .core import (  # noqa: F401
    ALL_CATEGORIES,
    CORE_CATEGORIES,
    ActorType,
    AgentToken,
    Category,
    Change,
    ChangeBatch,
    Interaction,
    Lesson,
    LessonConfirmation,
    LessonRef,
    LessonStatus,
    LLMCall,
    Memory,
    Relevance,
    Tier,
    content_hash,
    normalize_text,
)
