"""The one interface every engine (offline, anthropic, openai, scripted in tests) implements.

Two kinds of work:
- `complete`: one prompt in, text out (reflection, consent, synthesis of a promotion).
- `run_tools`: a tool-calling session (refinement, observer, reflector, pruner). The engine
  drives the conversation; every tool call goes through `handler`, which is the product's code
  and enforces every rule (caps, protected lessons, invalid ids) whatever the model asks.

Every call is logged as an LLMCall row by the engine's `recorder` (see recorder.py). Call engines
outside `transaction.atomic`: a model call can take a minute, and a rolled-back transaction would
take the log of a failed call with it.

Engines: offline (default, no network), anthropic, openai (official SDKs), scripted (tests and
demos: plays back given tool calls). `registry.get_engine(persona, memory=...)` picks one.
"""

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol


class EngineError(Exception):
    """A call failed in a way the run should record and show (not a bug)."""


class MissingKeyError(EngineError):
    """The provider's API key is not configured; the message names the environment variable."""

    def __init__(self, provider: str, env_var: str = ""):
        self.provider = provider
        self.env_var = env_var
        if not env_var:  # a plain message
            super().__init__(provider)
            return
        super().__init__(
            f"the {provider} engine is selected but {env_var} is not set; set it in the environment "
            f"(keys are never read from the database), or choose the offline engine"
        )


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    input_schema: dict


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: dict


@dataclass(frozen=True)
class ToolResult:
    call_id: str
    content: str
    is_error: bool = False


@dataclass
class Completion:
    text: str
    model: str = ""
    tokens_in: int = 0
    tokens_out: int = 0
    stop_reason: str = ""


@dataclass
class ToolSession:
    final_text: str = ""
    turns: int = 0
    tool_calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    stopped_by: str = ""  # "model" | "max_turns" | "should_stop"
    calls: list = field(default_factory=list)


@dataclass(frozen=True)
class EngineConfig:
    provider: str
    model: str = ""
    max_tokens: int = 1024
    temperature: float = 0.5
    base_url: str = ""
    timeout: float = 60.0
    max_retries: int = 2
    retry_max_delay: float = 30.0  # upper bound on the SDK's wait between retries (seconds)


# The offline engine has no model: a feature passes a policy that decides the next tool calls
# from what happened so far (deterministically), so the offline path goes through the same
# handler, caps and breakers as a real model.
OfflinePolicy = Callable[[list], list]  # (history of (ToolCall, ToolResult)) -> next calls ([] ends)


class Engine(Protocol):
    provider: str
    model: str
    recorder: Any  # memory.engines.recorder.CallRecorder

    def complete(self, *, system: str, prompt: str, purpose: str, max_tokens: int | None = None) -> Completion: ...

    def run_tools(
        self,
        *,
        system: str,
        prompt: str,
        tools: list[Tool],
        handler: Callable[[ToolCall], ToolResult],
        purpose: str,
        max_turns: int = 20,
        should_stop: Callable[[], bool] | None = None,
        offline_policy: OfflinePolicy | None = None,
        max_tokens: int | None = None,  # longest answer; the engine's configured max_tokens when None
    ) -> ToolSession: ...


def tool_result_json(call, payload: Any, is_error=False):
    return ToolResult(
        call_id=call.id, content=payload if isinstance(payload, str) else json.dumps(payload), is_error=is_error
    )


def parse_tool_arguments(raw) -> tuple[dict, str]:
    """Model-supplied tool arguments -> (arguments, problem). A problem is fed back to the model."""
    if isinstance(raw, dict):
        return raw, ""
    if raw is None or raw == "":
        return {}, ""
    if isinstance(raw, str):
        try:
            value = json.loads(raw)
        except ValueError as exc:
            return {}, f"the arguments are not valid JSON ({exc.msg} at position {exc.pos}); send a JSON object"
        if isinstance(value, dict):
            return value, ""
        return {}, f"the arguments must be a JSON object, got {type(value).__name__}"
    return {}, f"the arguments must be a JSON object, got {type(raw).__name__}"


def dispatch_tool_call(call_id: str, name: str, raw_arguments, tools, handler) -> tuple[ToolCall, ToolResult]:
    """Run one model tool call through the product's handler.

    What the model got wrong (unknown tool, unreadable arguments) comes back to it as an error
    result so it can correct itself; the handler only ever sees well-formed calls.
    """
    arguments, problem = parse_tool_arguments(raw_arguments)
    call = ToolCall(id=call_id, name=name, arguments=arguments)
    known = {tool.name for tool in tools}
    if known and name not in known:
        return call, ToolResult(
            call.id, f"Unknown tool '{name}'. Available tools: {', '.join(sorted(known))}.", is_error=True
        )
    if problem:
        return call, ToolResult(call.id, f"Tool '{name}' was not run: {problem}.", is_error=True)
    result = handler(call)
    if isinstance(result, str):
        result = ToolResult(call.id, result)
    elif not isinstance(result, ToolResult):
        result = tool_result_json(call, result)
    return call, result


def single_tool_answer(engine, *, system, prompt, tool, purpose, error, max_tokens=None):
    """The arguments of the one call of `tool` a model must make to answer; `error(message)` is
    raised when the call fails, the tool refused the arguments, or it was not called exactly once."""
    answers = []

    def handler(call):
        answers.append(call.arguments)
        return "Recorded."

    label = getattr(engine, "provider", "model")
    try:
        session = engine.run_tools(
            system=system,
            prompt=prompt,
            tools=[tool],
            handler=handler,
            purpose=purpose,
            max_turns=1,
            max_tokens=max_tokens,
        )
    except EngineError as exc:
        raise error(f"the {label} call failed ({exc})") from None
    refused = [result.content for call, result in session.calls if result.is_error]
    if refused:
        raise error(f"the {label} answer was not usable ({refused[0]})")
    if len(answers) != 1:
        raise error(f"the {label} answer called {tool.name} {len(answers)} times instead of once")
    return answers[0]
