"""Which engine a persona gets, and that offline and scripted runs are logged like model calls."""

import pytest

from memory.engines.anthropic import AnthropicEngine
from memory.engines.base import EngineError, MissingKeyError, Tool, ToolCall, ToolResult
from memory.engines.offline import OfflineEngine
from memory.engines.openai import OpenAIEngine
from memory.engines.registry import engine_override, get_engine
from memory.engines.scripted import ScriptedEngine
from memory.models import LLMCall

NOTE = Tool("note", "Write a note.", {"type": "object", "properties": {"text": {"type": "string"}}})


def echo(call):
    return ToolResult(call.id, f"noted {call.arguments.get('text', '')}")


@pytest.mark.parametrize(
    ("persona_provider", "default", "expected"),
    [
        ("", "offline", OfflineEngine),
        ("anthropic", "offline", AnthropicEngine),
        ("", "openai", OpenAIEngine),
        ("offline", "anthropic", OfflineEngine),
    ],
)
def test_persona_provider_else_global_default(memory, settings, persona_provider, default, expected):
    settings.LLM_DEFAULT_PROVIDER = default
    memory.persona.provider = persona_provider
    engine = get_engine(memory.persona, memory=memory)
    assert type(engine) is expected
    assert engine.recorder.persona == memory.persona and engine.recorder.memory == memory


def test_provider_defaults_come_from_settings(persona, settings):
    settings.ANTHROPIC_DEFAULT_MODEL = "claude-default"
    settings.ANTHROPIC_BASE_URL = "http://gateway.invalid"
    persona.provider = "anthropic"
    engine = get_engine(persona)
    assert (engine.model, engine.base_url, engine.config.max_tokens) == (
        "claude-default",
        "http://gateway.invalid",
        1024,
    )


def test_missing_key_is_an_error_never_a_downgrade(persona, settings):
    settings.OPENAI_API_KEY = ""
    persona.provider = "openai"
    engine = get_engine(persona)
    assert engine.provider == "openai"
    with pytest.raises(MissingKeyError, match="OPENAI_API_KEY is not set"):
        engine.run_tools(system="", prompt="p", tools=[NOTE], handler=echo, purpose="refinement")


def test_offline_run_is_logged(memory):
    engine = get_engine(memory.persona, memory=memory)
    calls = iter([[ToolCall("1", "note", {"text": "a"})], []])

    session = engine.run_tools(
        system="",
        prompt="",
        tools=[NOTE],
        handler=echo,
        purpose="compaction",
        offline_policy=lambda history: next(calls),
    )

    assert session.stopped_by == "model" and session.tool_calls == 1
    (row,) = LLMCall.objects.all()
    assert (row.provider, row.purpose, row.outcome, row.tokens_in, row.tokens_out) == (
        "offline",
        "compaction",
        "ok",
        0,
        0,
    )
    assert row.memory == memory and row.persona == memory.persona


def test_offline_failures_are_logged(memory):
    engine = get_engine(memory.persona, memory=memory)
    with pytest.raises(EngineError):
        engine.complete(system="", prompt="", purpose="reflection")

    def broken(history):
        raise RuntimeError("policy bug")

    with pytest.raises(RuntimeError):
        engine.run_tools(system="", prompt="", tools=[], handler=echo, purpose="pruning", offline_policy=broken)
    assert list(LLMCall.objects.order_by("id").values_list("purpose", "outcome")) == [
        ("reflection", "error"),
        ("pruning", "error"),
    ]
    assert "policy bug" in LLMCall.objects.get(purpose="pruning").error


def test_scripted_engine_plays_turns_through_the_handler(memory):
    engine = ScriptedEngine(
        turns=[
            [ToolCall("c1", "note", {"text": "one"}), ("note", {"text": "two"})],
            lambda history: [{"name": "note", "arguments": {"text": f"after {len(history)}"}}],
            [ToolCall("c4", "note", '{"text": broken')],
            "Finished.",
        ],
        completions=["YES"],
        tokens_per_call=(3, 1),
    )
    with engine_override(engine):
        assert get_engine(memory.persona, memory=memory) is engine
        assert engine.complete(system="", prompt="consent?", purpose="consent").text == "YES"
        session = engine.run_tools(system="sys", prompt="go", tools=[NOTE], handler=echo, purpose="refinement")

    assert [r.content for _, r in session.calls] == [
        "noted one",
        "noted two",
        "noted after 2",
        "Tool 'note' was not run: the arguments are not valid JSON (Expecting value at position 9); send a JSON object.",
    ]
    assert session.calls[-1][1].is_error
    assert (session.turns, session.stopped_by, session.final_text) == (4, "model", "Finished.")
    assert (session.tokens_in, session.tokens_out) == (12, 4)
    assert engine.exhausted
    assert LLMCall.objects.filter(provider="scripted", memory=memory, outcome="ok").count() == 5
    assert get_engine(memory.persona, memory=memory).provider == "offline"  # override ended


def test_scripted_engine_fixture_and_failures(scripted_engine, memory):
    engine = scripted_engine(turns=[[("note", {"text": "x"})]] * 5, completions=[EngineError("model down")])

    with pytest.raises(EngineError, match="model down"):
        get_engine(memory.persona, memory=memory).complete(system="", prompt="", purpose="consent")
    with pytest.raises(EngineError, match="no completion left"):
        engine.complete(system="", prompt="", purpose="consent")
    session = engine.run_tools(system="", prompt="", tools=[NOTE], handler=echo, purpose="refinement", max_turns=2)

    assert session.stopped_by == "max_turns" and len(engine.turns) == 3
    assert LLMCall.objects.filter(outcome="error", memory=memory).count() == 2
