"""An engine that plays back a script: for tests and demos of whole runs without a model.

    engine = ScriptedEngine(
        turns=[
            [ToolCall("c1", "search", {"query": "retry"})],          # the model's first turn
            [ToolCall("c2", "delete", {"id": 7}), ToolCall("c3", "complete", {})],
            [],                                                      # ends the session
        ],
        completions=["YES", "- [PATTERN] Retry with backoff (ref: src/http.py#L10-L20)"],
    )

Each turn is a list of tool calls (or a callable taking the history of (ToolCall, ToolResult) so
far and returning that list, for ids known only at run time). A turn may also be a string: the
model's final text, ending the session. Calls go through the same handler and argument checks as
a real model's; `arguments` given as a string is parsed like a model's JSON, so malformed
arguments can be scripted too. An exception instance in the script is raised at that point (as an
EngineError, like a failed call). Turns are consumed across sessions; when they run out, the
model stops calling tools.
"""

import time
from collections import deque

from memory.engines.base import Completion, EngineError, ToolCall, ToolSession, dispatch_tool_call
from memory.engines.recorder import ERROR, OK, CallRecorder


class ScriptedEngine:
    provider = "scripted"

    def __init__(self, turns=(), completions=(), *, model="scripted", recorder=None, tokens_per_call=(0, 0)):
        self.turns = deque(turns)
        self.completions = deque(completions)
        self.model = model
        self.recorder = recorder
        self.tokens_per_call = tokens_per_call
        self.requests = []  # (kind, system, prompt, purpose), what the "model" was asked
        self.sessions = []  # every ToolSession it ran, in order

    def _record(self, purpose, error=""):
        if self.recorder is None:
            self.recorder = CallRecorder()
        tokens_in, tokens_out = self.tokens_per_call
        self.recorder.record(
            purpose=purpose,
            provider=self.provider,
            model=self.model,
            tokens_in=0 if error else tokens_in,
            tokens_out=0 if error else tokens_out,
            outcome=ERROR if error else OK,
            error=error,
        )

    def _fail(self, purpose, exc):
        error = exc if isinstance(exc, EngineError) else EngineError(str(exc))
        self._record(purpose, str(error))
        raise error

    @property
    def exhausted(self):
        return not self.turns and not self.completions

    def complete(self, *, system, prompt, purpose, max_tokens=None):
        self.requests.append(("complete", system, prompt, purpose))
        if not self.completions:
            self._fail(purpose, EngineError(f"the script has no completion left for '{purpose}'"))
        item = self.completions.popleft()
        if isinstance(item, BaseException):
            self._fail(purpose, item)
        self._record(purpose)
        tokens_in, tokens_out = self.tokens_per_call
        return Completion(
            text=str(item), model=self.model, tokens_in=tokens_in, tokens_out=tokens_out, stop_reason="end_turn"
        )

    def run_tools(
        self,
        *,
        system,
        prompt,
        tools,
        handler,
        purpose,
        max_turns=20,
        should_stop=None,
        offline_policy=None,
        max_tokens=None,
    ):
        self.requests.append(("run_tools", system, prompt, purpose))
        session = ToolSession()
        self.sessions.append(session)
        history = []
        started = time.monotonic()
        while True:
            if should_stop and should_stop():
                session.stopped_by = "should_stop"
                return session
            if session.turns >= max_turns:
                session.stopped_by = "max_turns"
                return session
            turn = self.turns.popleft() if self.turns else []
            if callable(turn):
                turn = turn(list(history))
            if isinstance(turn, BaseException):
                self._fail(purpose, turn)
            self._record(purpose)
            session.turns += 1
            session.tokens_in += self.tokens_per_call[0]
            session.tokens_out += self.tokens_per_call[1]
            if isinstance(turn, str):
                session.final_text = turn
                turn = []
            if not turn:
                session.stopped_by = "model"
                return session
            for n, item in enumerate(turn):
                call_id, name, raw_arguments = _unpack(item, f"scripted-{int(started * 1000)}-{session.turns}-{n}")
                call, result = dispatch_tool_call(call_id, name, raw_arguments, tools, handler)
                history.append((call, result))
                session.calls.append((call, result))
                session.tool_calls += 1
                if should_stop and should_stop():
                    session.stopped_by = "should_stop"
                    return session


def _unpack(item, fallback_id):
    """A scripted call: a ToolCall, a (name, arguments) pair, or a dict with name/arguments[/id]."""
    if isinstance(item, ToolCall):
        return item.id or fallback_id, item.name, item.arguments
    if isinstance(item, dict):
        return item.get("id") or fallback_id, item["name"], item.get("arguments", {})
    if isinstance(item, (tuple, list)) and len(item) == 2:
        return fallback_id, item[0], item[1]
    raise TypeError(f"a scripted turn holds ToolCall, dict or (name, arguments) items, not {item!r}")
