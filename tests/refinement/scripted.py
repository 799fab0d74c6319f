"""A minimal scripted engine for refinement tests: feeds fixed tool calls through the real handler."""

from memory.engines.base import Completion, ToolCall, ToolSession


class ScriptedEngine:
    provider = "scripted"

    def __init__(self, calls=(), consent="YES", after_call=None):
        self.calls = [
            c if isinstance(c, ToolCall) else ToolCall(id=f"c{i}", name=c[0], arguments=c[1])
            for i, c in enumerate(calls)
        ]
        self.consent = consent
        self.after_call = after_call
        self.results = []
        self.prompts = []

    def complete(self, *, system, prompt, purpose, max_tokens=None):
        self.prompts.append((purpose, prompt))
        return Completion(text=self.consent, model="scripted", tokens_in=40, tokens_out=1)

    def run_tools(
        self, *, system, prompt, tools, handler, purpose, max_turns=20, should_stop=None, offline_policy=None
    ):
        self.prompts.append((purpose, prompt))
        session = ToolSession(tokens_in=100, tokens_out=20)
        for call in self.calls:
            if should_stop and should_stop():
                session.stopped_by = "should_stop"
                return session
            result = handler(call)
            self.results.append((call, result))
            session.calls.append((call, result))
            session.tool_calls += 1
            if self.after_call:
                self.after_call(call, result)
        session.stopped_by = "model"
        return session
