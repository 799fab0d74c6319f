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
from .compaction import *  # noqa: F401,F403,E402
from .pipeline import *  # noqa: F401,F403,E402
from .promotion import *  # noqa: F401,F403,E402
from .refinement import *  # noqa: F401,F403,E402
from .imports import *  # noqa: F401,F403,E402
