"""The deterministic engine: no network, no key. Features supply the decisions (policies)."""

from memory.engines.base import Completion, EngineError, ToolSession


class OfflineEngine:
    provider = "offline"

    def __init__(self, config=None, recorder=None):
        self.config = config
        self.recorder = recorder

    def complete(self, *, system, prompt, purpose, max_tokens=None):
        raise EngineError(f"the offline engine has no free-text model; '{purpose}' needs an offline rule")

    def run_tools(self, *, system, prompt, tools, handler, purpose, max_turns=20, should_stop=None,
                  offline_policy=None):
        if offline_policy is None:
            raise EngineError(f"the offline engine needs a policy for '{purpose}'")
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


__all__ = ["OfflineEngine", "Completion"]
