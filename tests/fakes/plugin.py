"""Shared fixtures for talking to models in tests (registered in tests/conftest.py).

- `llm_server`: the fake Anthropic/OpenAI server (tests/fakes/llm_server.py), fresh per test.
- `llm_settings`: settings pointing both SDKs at it, with test keys, a short timeout and retries
  that wait milliseconds, not seconds.
- `scripted_engine(turns=..., completions=...)`: makes get_engine return a ScriptedEngine for the
  rest of the test.
"""

import pytest

from tests.fakes.llm_server import FakeLLMServer

TEST_ANTHROPIC_KEY = "sk-ant-test-key-not-real"
TEST_OPENAI_KEY = "sk-test-key-not-real"


@pytest.fixture
def llm_server():
    with FakeLLMServer() as server:
        yield server


@pytest.fixture
def llm_settings(settings, llm_server):
    settings.ANTHROPIC_API_KEY = TEST_ANTHROPIC_KEY
    settings.OPENAI_API_KEY = TEST_OPENAI_KEY
    settings.ANTHROPIC_BASE_URL = llm_server.anthropic_base_url
    settings.OPENAI_BASE_URL = llm_server.openai_base_url
    settings.LLM_TIMEOUT_SECONDS = 2.0
    settings.LLM_MAX_RETRIES = 2
    settings.LLM_RETRY_MAX_DELAY_SECONDS = 0.005
    return settings


@pytest.fixture
def scripted_engine():
    from memory.engines.registry import engine_override
    from memory.engines.scripted import ScriptedEngine

    overrides = []

    def install(turns=(), completions=(), **kwargs):
        engine = ScriptedEngine(turns=turns, completions=completions, **kwargs)
        context = engine_override(engine)
        context.__enter__()
        overrides.append(context)
        return engine

    yield install
    for context in reversed(overrides):
        context.__exit__(None, None, None)
