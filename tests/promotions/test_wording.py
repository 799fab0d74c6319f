"""Proposed wording: a model's single line (validated), or the offline choice of the most specific lesson."""

import pytest

from memory.engines.base import Completion, EngineError, ToolCall, ToolResult, ToolSession
from memory.promotions.services import promotion_detect

pytestmark = pytest.mark.django_db


class ScriptedEngine:
    """An engine of the shared interface that answers with a fixed text and records the prompts."""

    provider = "anthropic"

    def __init__(self, answer=None, error=None):
        self.answer, self.error, self.prompts = answer, error, []

    def complete(self, *, system, prompt, purpose, max_tokens=None):
        self.prompts.append((system, prompt, purpose))
        if self.error:
            raise self.error
        return Completion(text=self.answer, model="claude-test", tokens_in=10, tokens_out=5)

    def run_tools(self, *, system, prompt, tools, handler, purpose, max_turns=20, **kwargs):
        # The model finds no group of its own and its check agrees with the whole group, so only the
        # wording is under test here.
        if tools[0].name == "propose_groups":
            call = ToolCall("p1", "propose_groups", {"groups": []})
            return ToolSession(turns=1, tool_calls=1, calls=[(call, ToolResult(call.id, handler(call)))])
        ids = [int(line.split(" | ")[0][2:]) for line in prompt.splitlines() if " | " in line]
        call = ToolCall("v1", "verify_group", {"same_lesson": ids, "deserves_core": True, "reason": "Same point."})
        return ToolSession(turns=1, tool_calls=1, calls=[(call, ToolResult(call.id, handler(call)))])


def test_model_wording_is_used_and_keeps_the_refs(memory, themed):
    themed(3)
    engine = ScriptedEngine("[DECISION] Stripe webhooks: verify the signature before parsing the payload (ref: x.py)")
    (candidate,) = promotion_detect(memory=memory, engine=engine).created
    assert candidate.text == "Stripe webhooks: verify the signature before parsing the payload"
    assert candidate.category == "DECISION"
    assert candidate.engine == "anthropic:claude-test" and candidate.engine_note == ""
    assert "src/billing/webhooks.py#L10-L30" in candidate.refs
    _system, prompt, purpose = engine.prompts[0]
    assert purpose == "promotion" and "2026-01-01" in prompt and "src/billing/webhooks.py#L12" in prompt


@pytest.mark.parametrize(
    "answer, reason",
    [
        ("[OBSERVATION] Webhooks are tricky", "not a core category"),
        ("[PATTERN] one\n[PATTERN] two", "2 lines"),
        ("Verify signatures first", "[CATEGORY]"),
        ("", "nothing"),
        ("[PATTERN] " + "x" * 600, "at most"),
    ],
)
def test_unusable_model_answers_fall_back_visibly(memory, themed, answer, reason):
    themed(3)
    (candidate,) = promotion_detect(memory=memory, engine=ScriptedEngine(answer)).created
    assert candidate.engine == "offline"
    assert reason in candidate.engine_note
    assert candidate.text in {lesson.text for lesson in candidate.supporting.all()}


def test_model_failure_is_recorded_on_the_candidate(memory, themed):
    themed(3)
    (candidate,) = promotion_detect(
        memory=memory, engine=ScriptedEngine(error=EngineError("ANTHROPIC_API_KEY is not set"))
    ).created
    assert candidate.engine == "offline"
    assert "ANTHROPIC_API_KEY is not set" in candidate.engine_note


def test_offline_engine_words_it_without_a_model(memory, themed):
    themed(3)
    (candidate,) = promotion_detect(memory=memory).created
    assert candidate.engine == "offline" and candidate.engine_note == ""
