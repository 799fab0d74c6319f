"""Every model call leaves a row: one per HTTP round trip (retries included), or per offline run.

`get_engine` gives each engine a recorder bound to the persona and memory it works for, so the
engines never need to know about them; tests read `recorder.calls` to see what was logged.
"""

from memory.models import LLMCall

OK = "ok"
ERROR = "error"

_MAX_ERROR_CHARS = 2000


class CallRecorder:
    """persist=False keeps the rows in `calls` only (a scoring run that must write nothing)."""

    def __init__(self, *, persona=None, memory=None, persist=True):
        if persona is None and memory is not None:
            persona = memory.persona
        self.persona = persona
        self.memory = memory
        self.persist = persist
        self.calls: list[LLMCall] = []

    def record(self, *, purpose, provider, model="", tokens_in=0, tokens_out=0, latency_ms=0, outcome=OK, error=""):
        call = (LLMCall.objects.create if self.persist else LLMCall)(
            persona=self.persona,
            memory=self.memory,
            purpose=(purpose or "unspecified")[:50],
            provider=provider[:20],
            model_name=(model or "")[:100],
            tokens_in=max(int(tokens_in or 0), 0),
            tokens_out=max(int(tokens_out or 0), 0),
            latency_ms=max(int(latency_ms or 0), 0),
            outcome=outcome,
            error=(error or "")[:_MAX_ERROR_CHARS],
        )
        self.calls.append(call)
        return call

    @property
    def errors(self):
        return [c for c in self.calls if c.outcome == ERROR]

    def totals(self, since=0):
        """(calls, tokens in, tokens out) of the calls recorded after the first `since`."""
        calls = self.calls[since:]
        return len(calls), sum(c.tokens_in for c in calls), sum(c.tokens_out for c in calls)
