"""The deterministic engine: no network, no key. Features supply the decisions (policies).

Its runs are logged like any model call (provider offline, no tokens) so the call log shows every
job's engine work, whichever engine did it.
"""

import time

from memory.engines.base import Completion, EngineError, ToolSession
from memory.engines.recorder import ERROR, OK, CallRecorder


class OfflineEngine:
    provider = "offline"
    model = "offline"

    def __init__(self, config=None, recorder=None):
        self.config = config
        self.recorder = recorder if recorder is not None else CallRecorder()

    def _log(self, purpose, started, error=""):
        self.recorder.record(
            purpose=purpose,
            provider=self.provider,
            model=self.model,
            latency_ms=int((time.monotonic() - started) * 1000),
            outcome=ERROR if error else OK,
            error=error,
        )

    def complete(self, *, system, prompt, purpose, max_tokens=None):
        message = f"the offline engine has no free-text model; '{purpose}' needs an offline rule"
        self._log(purpose, time.monotonic(), message)
        raise EngineError(message)

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
        started = time.monotonic()
        if offline_policy is None:
            message = f"the offline engine needs a policy for '{purpose}'"
            self._log(purpose, started, message)
            raise EngineError(message)
        try:
            session = self._run(handler, max_turns, should_stop, offline_policy)
        except Exception as exc:
            self._log(purpose, started, f"{type(exc).__name__}: {exc}")
            raise
        self._log(purpose, started)
        return session

    def _run(self, handler, max_turns, should_stop, offline_policy):
        session = ToolSession()
        history = []
        while session.turns < max_turns:
            if should_stop and should_stop():
                session.stopped_by = "should_stop"
                return session
            calls = offline_policy(history)
            session.turns += 1
            if not calls:
                session.stopped_by = "model"
                return session
            for call in calls:
                result = handler(call)
                history.append((call, result))
                session.calls.append((call, result))
                session.tool_calls += 1
                if should_stop and should_stop():
                    session.stopped_by = "should_stop"
                    return session
        session.stopped_by = "max_turns"
        return session


__all__ = ["Completion", "OfflineEngine"]
