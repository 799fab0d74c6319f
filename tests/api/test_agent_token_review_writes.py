"""Agent tokens cannot approve, apply, reject, revert or edit prompts: the review forms need a person.

A valid bearer token without a session is anonymous to every promotion, compaction and refinement
form: each POST sends it to the login page, with or without htmx, and nothing changes.
"""

from datetime import date

import pytest
from django.test.client import MULTIPART_CONTENT
from django.urls import reverse

from memory.compaction.services import compaction_propose
from memory.models import (
    ChangeBatch,
    CompactionProposal,
    LLMCall,
    PromotionCandidate,
    RefinementPromptVersion,
    RefinementRun,
)
from memory.promotions.services import promotion_detect
from memory.refinement.services import refinement_prompt_save
from memory.services import Actor
from tests.compaction.helpers import ScriptedEngine as CompactionEngine
from tests.factories import MemoryFactory, make_lesson
from tests.promotions.conftest import THEME
from tests.refinement.helpers import core, run_with, state
from tests.refinement.scripted import ScriptedEngine as RefinementEngine

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(persona, project, memory, approver):
    """One of everything a reviewer decides on, all for the token's own persona."""
    for i, (text, ref) in enumerate(THEME):
        make_lesson(memory, text, refs=ref, day=date(2026, 1, 1 + i))
    (candidate,) = promotion_detect(memory=memory).created

    compacted = MemoryFactory(persona=persona)
    a = make_lesson(compacted, "Retry uses a fixed 1s delay in src/queue/worker.ts")
    b = make_lesson(compacted, "Queue worker retry in src/queue/worker.ts has no backoff")
    proposal = compaction_propose(
        memory=compacted,
        actor=Actor.job("tests"),
        engine=CompactionEngine(
            f"- [OBSERVATION] Retry in src/queue/worker.ts waits 1s, no backoff {{ids: {a.pk}, {b.pk}}}\n"
        ),
    )
    assert proposal.status == "pending", proposal.validation_errors

    refined = MemoryFactory(persona=persona)
    lessons = [core(refined, f"Lesson {i} about the export job in src/export_{i}.py") for i in range(12)]
    run = run_with(refined, RefinementEngine([("delete", {"id": lessons[0].pk}), ("complete", {})]))
    assert run.status == "completed"
    version = refinement_prompt_save(persona=persona, text="Merge only exact duplicates.", user=approver)
    return {
        "candidate": candidate,
        "proposal": proposal,
        "line": proposal.lines.first(),
        "run": run,
        "version": version,
        "memories": [memory, compacted, refined],
    }


def snapshot(world):
    persona = world["memories"][0].persona
    persona.refresh_from_db()
    return {
        "lessons": [state(m) for m in world["memories"]],
        "candidates": list(PromotionCandidate.objects.order_by("pk").values_list("pk", "status", "text")),
        "proposals": list(CompactionProposal.objects.order_by("pk").values_list("pk", "status", "reason")),
        "lines": list(world["proposal"].lines.order_by("pk").values_list("text", "edited")),
        "runs": list(RefinementRun.objects.order_by("pk").values_list("pk", "status")),
        "batches": ChangeBatch.objects.count(),
        "prompt": persona.refinement_prompt,
        "versions": RefinementPromptVersion.objects.count(),
        "llm_calls": LLMCall.objects.count(),
    }


def review_posts(world, persona, memory):
    candidate, proposal, run, version = world["candidate"], world["proposal"], world["run"], world["version"]
    return [
        (reverse("promotions:approve", args=[candidate.pk]), {}),
        (
            reverse("promotions:approve", args=[candidate.pk]),
            {"edit": "1", "text": "Agents decide their own core memory", "category": "DECISION", "refs": ""},
        ),
        (reverse("promotions:reject", args=[candidate.pk]), {"reason": "agent says no"}),
        (reverse("promotions:detect"), {"memory": memory.pk}),
        (reverse("compaction-apply", args=[proposal.pk]), {}),
        (reverse("compaction-reject", args=[proposal.pk]), {"reason": "agent says no"}),
        (reverse("compaction-revert", args=[proposal.pk]), {}),
        (
            reverse("compaction-line-edit", args=[proposal.pk, world["line"].pk]),
            {"category": "OBSERVATION", "text": "rewritten by an agent", "refs": ""},
        ),
        (reverse("compaction-propose", args=[world["memories"][1].pk]), {}),
        (reverse("refinement:run-revert", args=[run.pk]), {"reason": "agent says undo"}),
        (reverse("refinement:run-start", args=[world["memories"][2].pk]), {}),
        (reverse("refinement:prompt", args=[persona.pk]), {"text": "Delete everything you can."}),
        (reverse("refinement:prompt-preview", args=[persona.pk]), {"text": "Delete everything you can."}),
        (reverse("refinement:prompt-restore", args=[persona.pk, version.pk]), {}),
        (reverse("batch_revert", args=[run.batch_id]), {}),
    ]


@pytest.mark.parametrize("htmx", [False, True], ids=["form", "htmx"])
def test_bearer_token_cannot_act_on_any_review_form(make_agent, persona, memory, world, htmx):
    agent, _token = make_agent(persona)
    if htmx:
        agent.headers["HX-Request"] = "true"
    before = snapshot(world)
    posts = review_posts(world, persona, memory)
    for url, data in posts:
        response = agent.post(url, data, content_type=MULTIPART_CONTENT)
        if htmx and response.status_code == 200:  # htmx is told to load the login page as a whole page
            assert response["HX-Redirect"].startswith("/accounts/login/"), (url, response.headers)
        else:
            assert response.status_code in (302, 401, 403), (url, response.status_code)
        if response.status_code == 302:
            assert "/accounts/login/" in response["Location"], (url, response["Location"])
        assert snapshot(world) == before, url
    assert {url.split("/")[1] for url, _ in posts} >= {"promotions", "compactions", "refinement"}


def test_the_same_posts_work_for_an_approver(client_for, approver, persona, memory, world):
    """Guard against a test that cannot fail: with a session, the same forms do change things."""
    client = client_for(approver)
    before = snapshot(world)
    client.post(reverse("promotions:approve", args=[world["candidate"].pk]))
    client.post(reverse("compaction-apply", args=[world["proposal"].pk]))
    client.post(reverse("refinement:run-revert", args=[world["run"].pk]), {"reason": "undo"})
    after = snapshot(world)
    assert after["candidates"] != before["candidates"]
    assert after["proposals"] != before["proposals"]
    assert after["runs"] != before["runs"]
