"""Choose the engine for a persona: its own provider, else the global default.

A missing API key is not an error here: the engine raises MissingKeyError (naming the variable)
on its first call, so the run that needed the model records the failure. It never falls back to
the offline engine.
"""

from contextlib import contextmanager
from dataclasses import replace

from django.conf import settings

from memory.engines.base import EngineConfig, EngineError
from memory.engines.offline import OfflineEngine
from memory.engines.recorder import CallRecorder

PROVIDERS = ("offline", "anthropic", "openai")

_override = None


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
        retry_max_delay=settings.LLM_RETRY_MAX_DELAY_SECONDS,
    )


def get_engine(persona, *, memory=None, provider="", model=""):
    """The persona's engine; `provider` (and `model`) for a feature with an engine setting of its own,
    keeping the persona's model and endpoint only when they are for that provider."""
    if persona is None and memory is not None:
        persona = memory.persona
    recorder = CallRecorder(persona=persona, memory=memory)
    if _override is not None:
        return _overridden(_override, persona, memory, recorder)
    config = engine_config(persona)
    if provider and provider != config.provider:
        config = replace(config, provider=provider, model="", base_url="")
    if model:
        config = replace(config, model=model)
    return engine_for_config(config, recorder)


def engine_for_config(config, recorder):
    """The engine of `config.provider` (no override): for a run outside any persona."""
    if config.provider == "offline":
        return OfflineEngine(config, recorder=recorder)
    if config.provider == "anthropic":
        from memory.engines.anthropic import AnthropicEngine

        return AnthropicEngine(config, recorder=recorder)
    if config.provider == "openai":
        from memory.engines.openai import OpenAIEngine

        return OpenAIEngine(config, recorder=recorder)
    raise EngineError(f"engine '{config.provider}' is not available (choose one of {', '.join(PROVIDERS)})")


def _overridden(override, persona, memory, recorder):
    if callable(override) and not hasattr(override, "run_tools"):
        return override(persona=persona, memory=memory, recorder=recorder)
    # Calls are attributed to the persona and memory of each get_engine call, unless the engine
    # was built with its own recorder.
    if getattr(override, "recorder", None) is None or getattr(override, "rebind_recorder", False):
        override.recorder = recorder
        override.rebind_recorder = True
    return override


@contextmanager
def engine_override(engine):
    """Make get_engine return `engine` (an engine, or a factory called with persona, memory,
    recorder) for every persona, e.g. a ScriptedEngine in a test or a demo."""
    global _override
    previous, _override = _override, engine
    try:
        yield engine
    finally:
        _override = previous
