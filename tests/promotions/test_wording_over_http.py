"""Promotion wording through the real OpenAI SDK against the local fake server."""

import pytest

from memory.models import LLMCall
from memory.promotions.services import promotion_detect
from tests.promotions.conftest import grouping, verdict

pytestmark = pytest.mark.django_db


@pytest.fixture
def fake(memory, llm_settings, llm_server):
    memory.persona.provider = "openai"
    memory.persona.save()
    # The model's own grouping finds nothing new: the word rule's group is checked and worded.
    return llm_server.openai.tool_calls([grouping()])


def test_model_line_becomes_the_proposed_wording(memory, themed, fake):
    fake.tool_calls([verdict(themed(3))])
    fake.text("[DECISION] Stripe webhooks verify the signature before parsing the payload", model="gpt-wording")

    (candidate,) = promotion_detect(memory=memory).created

    assert candidate.text == "Stripe webhooks verify the signature before parsing the payload"
    assert candidate.category == "DECISION"
    assert candidate.engine == "openai:gpt-wording" and candidate.engine_note == ""
    assert "src/billing/webhooks.py#L10-L30" in candidate.refs
    _grouped, _check, request = fake.requests
    prompt = request.json["messages"][-1]["content"]
    assert "2026-01-01" in prompt and "src/billing/webhooks.py#L12" in prompt
    calls = LLMCall.objects.order_by("id")
    assert [(c.provider, c.purpose, c.outcome) for c in calls] == [
        ("openai", "promotion grouping", "ok"),
        ("openai", "promotion verification", "ok"),
        ("openai", "promotion", "ok"),
    ]


def test_unusable_answer_falls_back_to_the_most_specific_lesson(memory, themed, fake):
    fake.tool_calls([verdict(themed(3))])
    fake.text("[OBSERVATION] Webhooks are tricky")

    (candidate,) = promotion_detect(memory=memory).created

    assert candidate.engine == "offline" and "not a core category" in candidate.engine_note
    assert candidate.text in {lesson.text for lesson in candidate.supporting.all()}


def test_rate_limit_then_success(memory, themed, fake):
    fake.tool_calls([verdict(themed(3))])
    fake.error(429, "slow down", retry_after=0.01).text("[PATTERN] Webhook signature first in webhooks.py")

    (candidate,) = promotion_detect(memory=memory).created

    assert candidate.text == "Webhook signature first in webhooks.py" and candidate.engine.startswith("openai")
    assert len(fake.requests) == 4


def test_server_failure_is_noted_on_the_candidate(memory, themed, fake):
    fake.tool_calls([verdict(themed(3))])
    for _ in range(3):
        fake.error(503, "overloaded")

    (candidate,) = promotion_detect(memory=memory).created

    assert candidate.engine == "offline" and "503" in candidate.engine_note
