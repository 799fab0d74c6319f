"""Choose the engine for a persona: its own provider, else the global default."""

from django.conf import settings

from memory.engines.base import EngineConfig, EngineError
from memory.engines.offline import OfflineEngine


def engine_config(persona):
    provider = (persona.provider if persona else "") or settings.LLM_DEFAULT_PROVIDER
    return EngineConfig(
        provider=provider,
        model=(persona.model_name if persona else "") or "",
        max_tokens=(persona.max_tokens if persona else None) or settings.LLM_DEFAULT_MAX_TOKENS,
        temperature=persona.temperature if persona else 0.5,
        base_url=(persona.base_url if persona else "") or "",
        timeout=settings.LLM_TIMEOUT_SECONDS,
        max_retries=settings.LLM_MAX_RETRIES,
    )


def get_engine(persona, *, memory=None):
    config = engine_config(persona)
    if config.provider == "offline":
        return OfflineEngine(config)
    raise EngineError(f"engine '{config.provider}' is not available")
