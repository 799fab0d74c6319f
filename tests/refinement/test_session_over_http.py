"""The refinement tool session through the real Anthropic and OpenAI SDKs against the local fake server.

The model's tool calls travel as the providers' wire format; the cap, the protected-lesson rule
and the retention breaker are enforced on what comes back, and the tool results go back to the model.
"""

import pytest

from memory.models import ChangeBatch, LLMCall, RefinementOperation, RefinementRun
from memory.refinement.services import refinement_run_revert
from memory.services import Actor

from .helpers import core, run_with, state

pytestmark = pytest.mark.django_db

S = RefinementRun.Status


@pytest.fixture(params=["anthropic", "openai"])
def provider(request, memory, llm_settings):
    memory.persona.provider = request.param
    memory.persona.save()
    return request.param


@pytest.fixture
def fake(provider, llm_server):
    return getattr(llm_server, provider)


def lessons_of(memory, n):
    return [
        core(
            memory,
            f"Lesson {i:03d}: the deploy script for service {i} must run migrations before "
            f"restarting worker pool {i % 7}",
        )
        for i in range(n)
    ]


def tool_results_sent(provider, body):
    """The text of each tool result the SDK sent back, in order."""
    if provider == "anthropic":
        last = body["messages"][-1]
        assert last["role"] == "user"
        return [block["content"] for block in last["content"] if block["type"] == "tool_result"]
    messages = body["messages"]
    last_assistant = max(i for i, m in enumerate(messages) if m["role"] == "assistant")
    return [m["content"] for m in messages[last_assistant + 1 :] if m["role"] == "tool"]


def test_deletes_round_trip_and_the_cap_holds(fake, provider, memory):
    lessons = lessons_of(memory, 140)
    guarded = lessons[139]
    guarded.protected = True
    guarded.save()
    before = state(memory)
    fake.text("YES")
    fake.tool_calls([("search", {"query": "deploy script"})])
    deletes = [("delete", {"id": lesson.pk, "reason": "duplicate"}) for lesson in lessons[:12]]
    fake.tool_calls([("delete", {"id": guarded.pk}), *deletes])
    fake.tool_calls([("complete", {"summary": "removed duplicates"})])

    run = run_with(memory, None)

    assert run.status == S.COMPLETED, run.error
    assert run.engine == provider and run.consent_answer == "YES"
    consent, search, mutate, finish = (r.json for r in fake.requests)
    assert [t["name"] if provider == "anthropic" else t["function"]["name"] for t in search["tools"]] == [
        "search",
        "consolidate",
        "update",
        "delete",
        "protect",
        "complete",
    ]
    assert "tools" not in consent
    (search_result,) = tool_results_sent(provider, mutate)
    assert "Lesson 000" in search_result
    results = tool_results_sent(provider, finish)
    assert len(results) == 13
    assert "protected" in results[0]
    assert all("Deleted lesson" in text for text in results[1:11])
    assert all("cap of 10" in text and "not applied" in text for text in results[11:])

    deleted = {lesson.pk for lesson in lessons[:10]}
    assert {pk for pk, _, _, status, _ in state(memory) if status == "deleted"} == deleted
    outcomes = list(run.operations.filter(action="delete").order_by("seq").values_list("outcome", flat=True))
    assert outcomes == ["refused"] + ["applied"] * 10 + ["refused"] * 2
    batch = ChangeBatch.objects.get(kind=ChangeBatch.Kind.REFINEMENT)
    assert run.batch == batch and batch.changes.count() == 10
    assert LLMCall.objects.filter(provider=provider, outcome="ok").count() == 4

    refinement_run_revert(run=run, actor=Actor.system("tests"))
    assert {row[:4] for row in state(memory)} == {row[:4] for row in before}


def test_the_breaker_rolls_back_everything_and_stops_the_conversation(fake, provider, memory):
    lessons = lessons_of(memory, 30)
    before = state(memory)
    fake.text("yes")
    fake.tool_calls([("delete", {"id": lesson.pk}) for lesson in lessons[:6]])
    fake.tool_calls([("complete", {})])  # never asked for: the session stops at the breaker

    run = run_with(memory, None)

    assert run.status == S.TERMINATED
    assert "every operation of the run was rolled back" in run.error
    assert len(fake.requests) == 2 and fake.pending == 1
    assert state(memory) == before
    assert not ChangeBatch.objects.filter(kind=ChangeBatch.Kind.REFINEMENT).exists()
    # 30 equal lessons: the 4th delete leaves 26/30 of the mass, under 90%.
    ops = run.operations.order_by("seq")
    assert [op.outcome for op in ops] == [RefinementOperation.Outcome.ROLLED_BACK] * 4
    assert run.current_action.startswith("terminated at #4")


@pytest.mark.parametrize("answer", ["NO", "No, the memory is fine as it is.", ""])
def test_consent_refused_declines_the_run(fake, provider, memory, answer):
    lessons_of(memory, 5)
    before = state(memory)
    fake.text(answer) if answer else fake.text("   ")

    run = run_with(memory, None)

    assert run.status == S.DECLINED
    assert len(fake.requests) == 1
    body = fake.requests[0].json
    assert "tools" not in body
    key = "max_tokens" if provider == "anthropic" else "max_completion_tokens"
    assert body[key] == 16
    assert state(memory) == before
    assert not run.operations.exists()
    assert list(LLMCall.objects.values_list("purpose", flat=True)) == ["refinement_consent"]
