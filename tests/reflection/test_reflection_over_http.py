"""Reflection through the real Anthropic and OpenAI SDKs against the local fake server."""

import pytest

from memory.models import ChangeBatch, Interaction, Lesson, LLMCall
from memory.reflection.services import interaction_reflect

ANSWER = (
    "Here is what I learned:\n"
    "- [PATTERN] Session refresh in auth/session.py never checks expiry (ref: auth/session.py#L20-L48)\n"
    "- [TODO] Add an expiry test to test_session.py (ref: auth/tests/test_session.py)\n"
)


@pytest.fixture(params=["anthropic", "openai"])
def provider(request, memory, llm_settings):
    memory.persona.provider = request.param
    memory.persona.save()
    return request.param


@pytest.fixture
def fake(provider, llm_server):
    return getattr(llm_server, provider)


def reflect(interaction, capture):
    with capture(execute=True):
        return interaction_reflect(interaction_id=interaction.pk)


def test_good_bullets_are_stored(fake, provider, interaction, memory, django_capture_on_commit_callbacks):
    fake.text(ANSWER, tokens_in=300, tokens_out=60)

    ids = reflect(interaction, django_capture_on_commit_callbacks)

    lessons = list(Lesson.objects.order_by("id"))
    assert ids == [lesson.pk for lesson in lessons]
    assert [(lesson.tier, lesson.category, lesson.text) for lesson in lessons] == [
        ("working", "PATTERN", "Session refresh in auth/session.py never checks expiry"),
        ("working", "TODO", "Add an expiry test to test_session.py"),
    ]
    assert [r.as_text() for r in lessons[0].refs.all()] == ["auth/session.py#L20-L48"]
    assert ChangeBatch.objects.get().kind == "reflection"
    interaction.refresh_from_db()
    assert interaction.status == Interaction.Status.REFLECTED
    (request,) = fake.requests
    body = request.json
    prompt = body["messages"][-1]["content"]
    assert "pr_review" in prompt and "tokens never expire on refresh" in prompt
    system = body["system"] if provider == "anthropic" else body["messages"][0]["content"]
    assert memory.persona.name in system
    (call,) = LLMCall.objects.all()
    assert (call.provider, call.purpose, call.outcome, call.tokens_in, call.tokens_out) == (
        provider,
        "reflection",
        "ok",
        300,
        60,
    )


@pytest.mark.parametrize(
    "answer",
    [
        "I reviewed the code and it looks fine.",
        "- [WHATEVER] Not a category (ref: a.py)\n",
        "- [PATTERN] Bad reference (ref: auth/session.py#L9-L2)\n",
    ],
)
def test_malformed_answer_stores_nothing(fake, answer, interaction, memory, django_capture_on_commit_callbacks):
    fake.text(answer)
    version = memory.version

    assert reflect(interaction, django_capture_on_commit_callbacks) == []

    assert not Lesson.objects.exists() and not ChangeBatch.objects.exists()
    interaction.refresh_from_db()
    memory.refresh_from_db()
    assert interaction.status == Interaction.Status.FAILED and interaction.error
    assert memory.version == version
    assert len(fake.requests) == 1


def test_rate_limited_then_answered(fake, interaction, django_capture_on_commit_callbacks):
    fake.error(429, "slow down", retry_after=0.01).text(ANSWER)

    ids = reflect(interaction, django_capture_on_commit_callbacks)

    assert len(ids) == 2 and len(fake.requests) == 2
    interaction.refresh_from_db()
    assert interaction.status == Interaction.Status.REFLECTED
    assert list(LLMCall.objects.order_by("id").values_list("outcome", flat=True)) == ["error", "ok"]


def test_server_down_marks_the_interaction_failed(fake, interaction, django_capture_on_commit_callbacks):
    for _ in range(3):
        fake.error(500, "boom")

    assert reflect(interaction, django_capture_on_commit_callbacks) == []

    interaction.refresh_from_db()
    assert interaction.status == Interaction.Status.FAILED and "500" in interaction.error
    assert not Lesson.objects.exists()
