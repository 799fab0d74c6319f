"""The whole pipeline through the real SDKs, against the local fake model server over HTTP."""

import pytest

from memory.engines.registry import get_engine
from memory.models import CompactionProposal, Lesson, PromotionCandidate
from tests.factories import make_lesson
from tests.pipeline.helpers import make_interaction, run_pipeline


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_pipeline_through_the_sdk(provider, llm_server, llm_settings, memory):
    fake = getattr(llm_server, provider)
    memory.persona.provider = provider
    memory.persona.save()
    memory.working_char_budget = 60
    memory.save()
    a = make_lesson(memory, "Queue worker restarts were done by hand on Monday.", relevance="low")
    b = make_lesson(memory, "Queue worker restarts were done by hand on Tuesday.", relevance="medium")
    c = make_lesson(memory, "Never restart the queue worker during the nightly load.", relevance="critical")
    interaction = make_interaction(memory)
    fake.tool_calls(
        [
            (
                "record_observations",
                {
                    "observations": [
                        {
                            "timestamp": "2026-03-02 09:15",
                            "content": "User decided to use Postgres advisory locks for the queue.",
                            "relevance": "high",
                            "sourceEntryIds": ["m1"],
                        },
                        {
                            "timestamp": "2026-03-02 09:15",
                            "content": "Made-up source.",
                            "relevance": "low",
                            "sourceEntryIds": ["x"],
                        },
                    ]
                },
            )
        ]
    ).text("Covered.")
    fake.tool_calls(
        [
            (
                "record_reflections",
                {
                    "reflections": [
                        {
                            "content": "Queue worker restarts are manual today.",
                            "supportingObservationIds": [str(a.pk), str(b.pk)],
                        }
                    ]
                },
            )
        ]
    ).text("Done.")
    fake.text("Nothing more.")  # reflector pass 2
    fake.tool_calls([("drop_observations", {"ids": [str(a.pk), str(c.pk)]})]).text("Dropped what is safe.")
    fake.text("Nothing else is safe.")  # pruner pass 2

    run = run_pipeline(memory, interaction, engine=get_engine(memory.persona, memory=memory))
    run.refresh_from_db()
    assert run.status == "completed", run.error
    assert run.engine == provider
    assert (run.observations_added, run.rejected, run.reflections_added, run.observations_dropped) == (1, 1, 1, 1)
    assert Lesson.objects.get(memory=memory, interaction=interaction).source_entry_ids == ["m1"]
    candidate = PromotionCandidate.objects.get(memory=memory, status="pending")
    assert sorted(candidate.evidence["lessons"]) == sorted([a.pk, b.pk])
    proposal = CompactionProposal.objects.get(pk=run.proposal_id)
    assert list(proposal.drops.values_list("lesson_id", flat=True)) == [a.pk]

    bodies = [r.json for r in fake.requests]
    assert len(bodies) == 8
    tool_names = [t.get("name") or t["function"]["name"] for t in bodies[0]["tools"]]
    assert tool_names == ["record_observations"]
    first_prompt = str(bodies[0]["messages"])
    assert "[Source entry id: m1]" in first_prompt and "[User @ 2026-03-02 09:15]" in first_prompt
    refused = str(bodies[1]["messages"])
    assert "Stored 1 new observation." in refused and "1 observation refused" in refused
    pruner_prompt = str(bodies[5]["messages"])
    assert "Still to cut" in pruner_prompt and "[coverage: cited]" in pruner_prompt
    assert f"{c.pk}: critical observations are never dropped" in str(bodies[6]["messages"])
