import pytest

from memory.engines.base import Completion, EngineError
from memory.models import Interaction


class ScriptedEngine:
    """An engine whose model always answers with the given text (or raises the given error)."""

    provider = "scripted"

    def __init__(self, answer="", error=None):
        self.answer = answer
        self.error = error
        self.calls = []

    def complete(self, *, system, prompt, purpose, max_tokens=None):
        self.calls.append({"system": system, "prompt": prompt, "purpose": purpose})
        if self.error:
            raise self.error
        return Completion(text=self.answer, model="scripted-1", tokens_in=10, tokens_out=20)

    def run_tools(self, **kwargs):
        raise EngineError("not used by reflection")


@pytest.fixture
def scripted(monkeypatch):
    """scripted(answer) -> the engine every reflection will use."""

    def install(answer="", error=None):
        engine = ScriptedEngine(answer, error)
        monkeypatch.setattr("memory.reflection.services.get_engine", lambda persona, memory=None: engine)
        return engine

    return install


@pytest.fixture
def interaction(memory):
    return Interaction.objects.create(
        memory=memory,
        trigger_type="pr_review",
        outcome="changes requested",
        summary="Reviewed the session handling in auth/session.py; tokens never expire on refresh.",
        files_changed=["auth/session.py#L20-L48", "auth/tests/test_session.py"],
    )
