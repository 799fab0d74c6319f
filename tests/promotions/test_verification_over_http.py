"""The model's check of each proposed group, through the real SDKs against the local fake server.

With a model engine detection first asks the model to group the lessons (proposals.py); these tests
answer that it found no group, so the groups checked are the word rule's.
"""

from datetime import date

import pytest

from memory.models import LLMCall, PromotionCandidate
from memory.promotions.services import DetectionError, promotion_detect
from tests.factories import make_lesson
from tests.promotions.conftest import grouping, verdict

pytestmark = pytest.mark.django_db

WORDING = "[PATTERN] Refunds need a token with the refunds:write scope"


@pytest.fixture
def openai(memory, llm_settings, llm_server):
    memory.persona.provider = "openai"
    memory.persona.save()
    return llm_server.openai


def _refund_lessons(memory, days=(1, 9, 17)):
    texts = [
        ("The refund endpoint returns 403 unless the API token has the refunds:write scope", "src/api/refunds.py#L12"),
        ("Refunds need a token with the refunds:write scope; read-only tokens get 403", "src/api/refunds.py"),
        (
            "Calling the refund endpoint with a read-only API token fails with 403: it lacks refunds:write",
            "src/api/refunds.py#L14",
        ),
    ]
    return [make_lesson(memory, text, refs=ref, day=date(2026, 5, d)) for (text, ref), d in zip(texts, days)]


def _decoy(memory, day=25):
    # Same file and words, another point: word matching groups it with the others.
    return make_lesson(
        memory,
        "Read-only API tokens can list refunds through the refund endpoint, paginated with a cursor",
        refs="src/api/refunds.py#L40",
        day=date(2026, 5, day),
    )


def test_the_model_confirms_the_group(memory, openai):
    lessons = _refund_lessons(memory)
    openai.tool_calls([grouping()])
    openai.tool_calls([verdict(lessons, reason="All three say refunds need the write scope.")], model="gpt-check")
    openai.text(WORDING)

    (candidate,) = promotion_detect(memory=memory).created

    assert set(candidate.supporting.all()) == set(lessons)
    assert candidate.verification_note == "Checked by openai: All three say refunds need the write scope."
    check = openai.requests[1].json
    assert check["tools"][0]["function"]["name"] == "verify_group"
    prompt = check["messages"][-1]["content"]
    assert all(f"{lesson.pk} | {lesson.lesson_date.isoformat()}" in prompt for lesson in lessons)
    assert LLMCall.objects.filter(purpose="promotion verification", outcome="ok").count() == 1


def test_a_member_the_model_rejects_leaves_the_group(memory, openai):
    lessons = _refund_lessons(memory)
    decoy = _decoy(memory)
    openai.tool_calls([grouping()])
    openai.tool_calls([verdict([*lessons, decoy], keep=lessons, reason="The pagination lesson is another point.")])
    openai.text(WORDING)

    (candidate,) = promotion_detect(memory=memory).created

    assert set(candidate.supporting.all()) == set(lessons)
    assert candidate.distinct_dates == 3
    assert f"left out: #{decoy.pk}" in candidate.verification_note
    assert str(decoy.pk) in openai.requests[1].json["messages"][-1]["content"]


def test_a_group_below_the_dates_rule_once_trimmed_is_dropped(memory, openai):
    lessons = _refund_lessons(memory, days=(1, 9))
    decoy = _decoy(memory)
    openai.tool_calls([grouping()])
    openai.tool_calls([verdict([*lessons, decoy], keep=lessons)])

    assert promotion_detect(memory=memory).created == []
    assert len(openai.requests) == 2  # grouping and check; no wording asked for a dropped group


def test_a_lesson_the_model_does_not_think_core_worthy_is_not_proposed(memory, openai):
    lessons = _refund_lessons(memory)
    openai.tool_calls([grouping()])
    openai.tool_calls([verdict(lessons, core=False, reason="A passing incident.")])

    assert promotion_detect(memory=memory).created == []


@pytest.mark.parametrize(
    "answer, message",
    [
        ("text", "called verify_group 0 times"),
        ("unknown id", "not in the group"),
        ("broken json", "not valid JSON"),
        ("missing field", "lacks deserves_core"),
    ],
)
def test_an_unusable_answer_is_a_clear_error_and_changes_no_candidate(memory, openai, themed, answer, message):
    # A pending candidate that this run would otherwise replace (a fourth lesson is new evidence).
    memory.persona.provider = "offline"
    memory.persona.save()
    themed(3)
    (before,) = promotion_detect(memory=memory).created
    memory.persona.provider = "openai"
    memory.persona.save()
    make_lesson(
        memory,
        "Stripe webhook signature verification comes before payload parsing, always",
        refs="src/billing/webhooks.py",
        day=date(2026, 1, 20),
    )
    ids = list(before.evidence["lessons"])
    openai.tool_calls([grouping()])
    if answer == "text":
        openai.text("They all say the same thing.")
    elif answer == "unknown id":
        openai.tool_calls([("verify_group", {"same_lesson": [*ids, 99999], "deserves_core": True, "reason": "x"})])
    elif answer == "broken json":
        openai.tool_calls([("verify_group", '{"same_lesson": [1, 2')])
    else:
        openai.tool_calls([("verify_group", {"same_lesson": ids, "reason": "x"})])

    with pytest.raises(DetectionError) as failure:
        promotion_detect(memory=memory)

    assert message in str(failure.value) and "No candidate was changed" in str(failure.value)
    before.refresh_from_db()
    assert before.status == "pending"
    assert PromotionCandidate.objects.count() == 1


def test_anthropic_check_through_its_sdk(memory, llm_settings, llm_server):
    memory.persona.provider = "anthropic"
    memory.persona.save()
    lessons = _refund_lessons(memory)
    decoy = _decoy(memory)
    llm_server.anthropic.tool_calls([grouping()])
    llm_server.anthropic.tool_calls([verdict([*lessons, decoy], keep=lessons, reason="Scope, not pagination.")])
    llm_server.anthropic.text(WORDING)

    (candidate,) = promotion_detect(memory=memory).created

    assert set(candidate.supporting.all()) == set(lessons)
    assert candidate.verification_note.startswith("Checked by anthropic: Scope, not pagination.")
    assert llm_server.anthropic.requests[1].json["tools"][0]["name"] == "verify_group"


def test_a_missing_key_stops_detection_with_its_name(memory, llm_settings, settings):
    memory.persona.provider = "openai"
    memory.persona.save()
    settings.OPENAI_API_KEY = ""
    _refund_lessons(memory)
    with pytest.raises(DetectionError, match="OPENAI_API_KEY"):
        promotion_detect(memory=memory)
    assert not PromotionCandidate.objects.exists()
