"""Both SDK adapters against the local fake server, over real HTTP (no SDK object is mocked)."""

import socket

import pytest

from memory.engines.base import EngineError, MissingKeyError, Tool, ToolResult
from memory.engines.registry import get_engine
from memory.models import LLMCall
from tests.fakes.plugin import TEST_ANTHROPIC_KEY, TEST_OPENAI_KEY

PROVIDERS = ["anthropic", "openai"]

SEARCH = Tool(
    name="search",
    description="Find lessons by words.",
    input_schema={"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
)


@pytest.fixture(params=PROVIDERS)
def provider(request):
    return request.param


@pytest.fixture
def fake(provider, llm_server):
    return getattr(llm_server, provider)


@pytest.fixture
def engine_for(llm_settings, memory, provider):
    def make(**persona_fields):
        persona = memory.persona
        persona.provider = provider
        for name, value in persona_fields.items():
            setattr(persona, name, value)
        persona.save()
        return get_engine(persona, memory=memory)

    return make


def sent_text_of_tool_results(provider, request_json):
    """The tool results the SDK sent back, as (call id, text, is_error) triples."""
    if provider == "anthropic":
        last = request_json["messages"][-1]
        assert last["role"] == "user"
        return [(b["tool_use_id"], b["content"], b["is_error"]) for b in last["content"]]
    results = [m for m in request_json["messages"] if m["role"] == "tool"]
    return [(m["tool_call_id"], m["content"], m["content"].startswith("Error:")) for m in results]


def test_completion_round_trip_logs_tokens(engine_for, fake, provider, memory, settings):
    fake.text("  A calm answer.  ", tokens_in=42, tokens_out=7)
    engine = engine_for()

    completion = engine.complete(system="You are careful.", prompt="Say something.", purpose="reflection")

    assert completion.text == "A calm answer."
    assert (completion.tokens_in, completion.tokens_out) == (42, 7)
    sent = fake.requests[0]
    body = sent.json
    if provider == "anthropic":
        assert sent.path == "/v1/messages"
        # The SDK sends the key as a bearer token (older versions used x-api-key).
        assert TEST_ANTHROPIC_KEY in (sent.headers.get("x-api-key"), sent.headers.get("authorization", "")[7:])
        assert body["system"] == "You are careful."
        assert body["messages"] == [{"role": "user", "content": "Say something."}]
        assert body["max_tokens"] == 1024
        assert body["model"] == settings.ANTHROPIC_DEFAULT_MODEL
        assert "tools" not in body
    else:
        assert sent.path == "/v1/chat/completions"
        assert sent.headers["authorization"] == f"Bearer {TEST_OPENAI_KEY}"
        assert body["messages"] == [
            {"role": "system", "content": "You are careful."},
            {"role": "user", "content": "Say something."},
        ]
        assert body["max_completion_tokens"] == 1024
        assert body["temperature"] == 0.5
        assert body["model"] == settings.OPENAI_DEFAULT_MODEL
        assert "tools" not in body

    (call,) = LLMCall.objects.all()
    assert (call.provider, call.purpose, call.outcome) == (provider, "reflection", "ok")
    assert (call.tokens_in, call.tokens_out) == (42, 7)
    assert call.persona_id == memory.persona_id and call.memory_id == memory.id
    assert call.model_name == body["model"]
    assert engine.recorder.calls == [call]


def test_persona_model_config_is_sent(engine_for, fake, provider, llm_server, settings):
    # The persona's own base URL wins over the global one (which here points nowhere).
    setattr(settings, f"{provider.upper()}_BASE_URL", "http://127.0.0.1:9")
    base_url = llm_server.anthropic_base_url if provider == "anthropic" else llm_server.openai_base_url
    fake.text("ok").text("again")
    engine = engine_for(model_name="special-model", max_tokens=333, temperature=0.1, base_url=base_url)

    engine.complete(system="s", prompt="p", purpose="consent", max_tokens=5)
    engine.complete(system="s", prompt="p", purpose="consent")

    first, second = (r.json for r in fake.requests)
    assert first["model"] == second["model"] == "special-model"
    key = "max_tokens" if provider == "anthropic" else "max_completion_tokens"
    assert (first[key], second[key]) == (5, 333)
    if provider == "openai":
        assert first["temperature"] == 0.1
    assert list(LLMCall.objects.values_list("model_name", flat=True)) == ["special-model"] * 2


def test_tool_call_round_trip(engine_for, fake, provider):
    fake.tool_calls([("search", {"query": "retry"})], tokens_in=100, tokens_out=20)
    fake.text("All done.", tokens_in=150, tokens_out=4)
    seen = []

    def handler(call):
        seen.append(call)
        return ToolResult(call.id, "found 2 lessons")

    session = get_engine_and_run(engine_for(), handler)

    assert [c.arguments for c in seen] == [{"query": "retry"}]
    assert (session.turns, session.tool_calls, session.stopped_by) == (2, 1, "model")
    assert session.final_text == "All done."
    assert (session.tokens_in, session.tokens_out) == (250, 24)
    first, second = (r.json for r in fake.requests)
    if provider == "anthropic":
        assert first["tools"] == [
            {"name": "search", "description": "Find lessons by words.", "input_schema": SEARCH.input_schema}
        ]
        assert first["system"] == "Tidy the memory."
        assistant = second["messages"][1]
        assert assistant["role"] == "assistant"
        assert assistant["content"][0]["type"] == "tool_use"
        assert assistant["content"][0]["id"] == seen[0].id
    else:
        assert first["tools"] == [
            {
                "type": "function",
                "function": {
                    "name": "search",
                    "description": "Find lessons by words.",
                    "parameters": SEARCH.input_schema,
                },
            }
        ]
        assistant = second["messages"][2]
        assert assistant["role"] == "assistant"
        assert assistant["tool_calls"][0]["id"] == seen[0].id
    assert sent_text_of_tool_results(provider, second) == [(seen[0].id, "found 2 lessons", False)]
    rows = list(LLMCall.objects.order_by("id").values_list("outcome", "tokens_in", "tokens_out", "purpose"))
    assert rows == [("ok", 100, 20, "refinement"), ("ok", 150, 4, "refinement")]


def get_engine_and_run(engine, handler, **kwargs):
    return engine.run_tools(
        system="Tidy the memory.", prompt="Start.", tools=[SEARCH], handler=handler, purpose="refinement", **kwargs
    )


def test_rate_limit_then_success(engine_for, fake):
    fake.error(429, "slow down", retry_after=0.01).text("fine now", tokens_in=9, tokens_out=2)

    completion = engine_for().complete(system="s", prompt="p", purpose="reflection")

    assert completion.text == "fine now"
    assert len(fake.requests) == 2
    failed, ok = LLMCall.objects.order_by("id")
    assert failed.outcome == "error" and "HTTP 429" in failed.error and "slow down" in failed.error
    assert (ok.outcome, ok.tokens_in, ok.tokens_out) == ("ok", 9, 2)


def test_server_errors_exhaust_retries(engine_for, fake, provider):
    for _ in range(3):
        fake.error(500, "boom")

    with pytest.raises(EngineError) as caught:
        engine_for().complete(system="s", prompt="p", purpose="reflection")

    message = str(caught.value)
    assert "HTTP 500" in message and "after 3 attempts" in message and "boom" in message
    assert len(fake.requests) == 3 and fake.pending == 0
    rows = list(LLMCall.objects.order_by("id"))
    assert [r.outcome for r in rows] == ["error"] * 3
    assert all("500" in r.error for r in rows)


def test_retries_are_bounded_by_settings(engine_for, fake, llm_settings):
    llm_settings.LLM_MAX_RETRIES = 0
    fake.error(503, "overloaded").text("never reached")

    with pytest.raises(EngineError, match="HTTP 503"):
        engine_for().complete(system="s", prompt="p", purpose="reflection")

    assert len(fake.requests) == 1 and fake.pending == 1


def test_timeout(engine_for, fake, llm_settings):
    llm_settings.LLM_TIMEOUT_SECONDS = 0.3
    llm_settings.LLM_MAX_RETRIES = 1
    fake.hang().hang()

    with pytest.raises(EngineError, match=r"did not answer within 0.3s after 2 attempts"):
        engine_for().complete(system="s", prompt="p", purpose="reflection")

    rows = list(LLMCall.objects.order_by("id"))
    assert [r.outcome for r in rows] == ["error", "error"]
    assert all("no answer within 0.3s" in r.error for r in rows)
    assert all(r.latency_ms >= 250 for r in rows)


def test_malformed_tool_arguments_go_back_to_the_model(engine_for, fake, provider):
    # OpenAI sends arguments as a JSON string; Anthropic sends an object, here a list instead.
    broken = '{"query": "retry' if provider == "openai" else ["not", "an", "object"]
    fake.tool_calls([("search", broken)])
    fake.text("Sorry, fixed.")
    handler_calls = []

    session = get_engine_and_run(engine_for(), lambda call: handler_calls.append(call) or ToolResult(call.id, "x"))

    assert handler_calls == []
    ((call, result),) = session.calls
    assert result.is_error and "was not run" in result.content
    assert session.stopped_by == "model" and session.final_text == "Sorry, fixed."
    ((call_id, text, is_error),) = sent_text_of_tool_results(provider, fake.requests[1].json)
    assert call_id == call.id and is_error
    assert ("not valid JSON" if provider == "openai" else "must be a JSON object") in text


def test_unknown_tool_goes_back_to_the_model(engine_for, fake, provider):
    fake.tool_calls([("drop_database", {})]).text("ok")
    session = get_engine_and_run(engine_for(), lambda call: pytest.fail("handler must not run"))
    ((_, result),) = session.calls
    assert result.is_error and "Unknown tool 'drop_database'" in result.content


def test_missing_key(engine_for, fake, provider, llm_settings):
    env_var = f"{provider.upper()}_API_KEY"
    setattr(llm_settings, env_var, "")

    with pytest.raises(MissingKeyError) as caught:
        engine_for().complete(system="s", prompt="p", purpose="reflection")

    assert caught.value.env_var == env_var and env_var in str(caught.value)
    assert fake.requests == []
    (row,) = LLMCall.objects.all()
    assert row.outcome == "error" and env_var in row.error


def test_rejected_key_is_not_retried_and_not_shown(engine_for, fake, provider):
    fake.error(401, "invalid x-api-key")

    with pytest.raises(EngineError, match=f"rejected the API key.*{provider.upper()}_API_KEY"):
        engine_for().complete(system="s", prompt="p", purpose="reflection")

    assert len(fake.requests) == 1
    (row,) = LLMCall.objects.all()
    assert TEST_ANTHROPIC_KEY not in row.error and TEST_OPENAI_KEY not in row.error


@pytest.mark.parametrize("body", [b"this is not json", b'{"unexpected": true}'])
def test_malformed_content(engine_for, fake, body):
    fake.raw(body)

    with pytest.raises(EngineError):
        engine_for().complete(system="s", prompt="p", purpose="reflection")

    (row,) = LLMCall.objects.all()
    assert row.outcome == "error" and row.error


def test_max_turns_ends_the_loop(engine_for, fake):
    for _ in range(3):
        fake.tool_calls([("search", {"query": "again"})])

    session = get_engine_and_run(engine_for(), lambda call: ToolResult(call.id, "nothing"), max_turns=2)

    assert (session.turns, session.tool_calls, session.stopped_by) == (2, 2, "max_turns")
    assert len(fake.requests) == 2


def test_should_stop_ends_the_loop_after_the_current_call(engine_for, fake):
    fake.tool_calls([("search", {"query": "a"}), ("search", {"query": "b"})])
    handled = []

    session = get_engine_and_run(
        engine_for(),
        lambda call: handled.append(call) or ToolResult(call.id, "ok"),
        should_stop=lambda: len(handled) >= 1,
    )

    assert len(handled) == 1 and session.stopped_by == "should_stop"
    assert len(fake.requests) == 1


def test_unreachable_server(engine_for, provider, llm_settings):
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    setattr(llm_settings, f"{provider.upper()}_BASE_URL", f"http://127.0.0.1:{port}")

    with pytest.raises(EngineError, match=r"could not reach .* after 3 attempts"):
        engine_for().complete(system="s", prompt="p", purpose="reflection")

    assert LLMCall.objects.filter(outcome="error").count() == 3
