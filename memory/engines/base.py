"""The one interface every engine (offline, anthropic, openai, scripted in tests) implements.

Two kinds of work:
- `complete`: one prompt in, text out (reflection, consent, synthesis of a promotion).
- `run_tools`: a tool-calling session (refinement, observer, reflector, pruner). The engine
  drives the conversation; every tool call goes through `handler`, which is the product's code
  and enforces every rule (caps, protected lessons, invalid ids) whatever the model asks.
"""

from dataclasses import dataclass, field
from typing import Any, Callable, Protocol


class EngineError(Exception):
    """A call failed in a way the run should record and show (not a bug)."""


class MissingKeyError(EngineError):
    pass


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


# The offline engine has no model: a feature passes a policy that decides the next tool calls
# from what happened so far (deterministically), so the offline path goes through the same
# handler, caps and breakers as a real model.
OfflinePolicy = Callable[[list], list]  # (history of (ToolCall, ToolResult)) -> next calls ([] ends)


class Engine(Protocol):
    provider: str

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
    ) -> ToolSession: ...


def tool_result_json(call, payload: Any, is_error=False):
    import json

    return ToolResult(call_id=call.id, content=payload if isinstance(payload, str) else json.dumps(payload),
                      is_error=is_error)
