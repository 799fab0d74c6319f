"""Compaction by a model through the real Anthropic SDK against the local fake server."""

import pytest

from memory.compaction.llm import COMPACTION_MAX_TOKENS
from memory.compaction.services import CompactionError, compaction_apply, compaction_propose
from memory.models import CompactionProposal, LLMCall
from tests.compaction.helpers import memory_state, working_set


@pytest.fixture
def fake(memory, llm_settings, llm_server):
    memory.persona.provider = "anthropic"
    memory.persona.save()
    return llm_server.anthropic


def test_model_answer_becomes_an_applicable_proposal(memory, lessons, good_output, actor, fake):
    fake.text(good_output, model="claude-compact", tokens_in=900, tokens_out=200)

    proposal = compaction_propose(memory=memory, actor=actor)

    assert proposal.status == CompactionProposal.Status.PENDING, proposal.validation_errors
    assert proposal.engine == "anthropic" and proposal.model_name == "claude-compact"
    (request,) = fake.requests
    body = request.json
    assert body["max_tokens"] == COMPACTION_MAX_TOKENS
    assert "at most 4 lines" in body["system"]
    prompt = body["messages"][0]["content"]
    for key in "abcdef":
        assert f"#{lessons[key].pk} " in prompt
    assert f"#{lessons['core'].pk} " not in prompt
    (call,) = LLMCall.objects.all()
    assert (call.purpose, call.outcome, call.tokens_in, call.tokens_out) == ("compaction", "ok", 900, 200)

    compaction_apply(proposal=proposal, actor=actor)
    texts = {row[1] for row in working_set(memory)}
    assert "Queue worker retries after a fixed 1s with no backoff" in texts
    assert lessons["c"].text not in texts


def test_an_invented_id_makes_the_proposal_invalid(memory, lessons, good_output, actor, fake):
    f = lessons["f"].pk
    fake.text(good_output.replace(f"{{ids: {f}}}", f"{{ids: {f}, 987654}}"))
    before = memory_state(memory)

    proposal = compaction_propose(memory=memory, actor=actor)

    assert proposal.status == CompactionProposal.Status.INVALID
    assert any("cites lesson #987654, which is not in the working memory" in e for e in proposal.validation_errors)
    with pytest.raises(CompactionError):
        compaction_apply(proposal=proposal, actor=actor)
    assert memory_state(memory) == before


def test_rate_limit_then_success(memory, lessons, good_output, actor, fake):
    fake.error(429, "slow down", retry_after=0.01).text(good_output)

    proposal = compaction_propose(memory=memory, actor=actor)

    assert proposal.status == CompactionProposal.Status.PENDING and len(fake.requests) == 2


def test_a_failing_server_gives_an_invalid_proposal_with_the_reason(memory, lessons, actor, fake):
    for _ in range(3):
        fake.error(500, "internal trouble")
    before = memory_state(memory)

    proposal = compaction_propose(memory=memory, actor=actor)

    assert proposal.status == CompactionProposal.Status.INVALID
    assert "500" in proposal.validation_errors[0] and "internal trouble" in proposal.validation_errors[0]
    assert memory_state(memory) == before
