"""GET /api/v1/lessons/{id} — one lesson with its provenance and history."""

from memory.models import Interaction
from memory.services import Actor, lesson_confirm, lesson_update
from tests.factories import make_lesson


def test_recall_with_provenance_and_history(agent, memory, persona, project):
    interaction = Interaction.objects.create(
        memory=memory, trigger_type="pr_review", outcome="merged", summary="Reviewed the retry loop"
    )
    source = make_lesson(memory, "Retry loop in worker.py has fixed delays")
    lesson = make_lesson(
        memory,
        "Retries in worker.py need backoff",
        refs="src/worker.py#L88-L95",
        interaction=interaction,
        derived_from=[source],
        source_entry_ids=["m1", "m2"],
    )
    lesson_confirm(lesson=lesson, interaction=interaction)
    lesson_update(
        lesson=lesson,
        text="Retries in src/worker.py need exponential backoff",
        actor=Actor.system("tests"),
        reason="more precise",
    )
    response = agent.get(f"/api/v1/lessons/{lesson.pk}")
    assert response.status_code == 200
    data = response.json()
    assert data["text"] == "Retries in src/worker.py need exponential backoff"
    assert data["persona"] == persona.name and data["project"] == project.slug
    assert data["interaction"]["id"] == interaction.pk and data["interaction"]["outcome"] == "merged"
    assert [d["id"] for d in data["derived_from"]] == [source.pk]
    assert data["source_entry_ids"] == ["m1", "m2"]
    assert len(data["confirmations"]) == 1
    assert [h["action"] for h in data["history"]] == ["create", "update"]
    assert data["history"][1]["before"]["text"] == "Retries in worker.py need backoff"
    assert data["history"][1]["reason"] == "more precise" and data["history"][1]["actor"] == "tests"
    assert data["refs"][0]["text"] == "src/worker.py#L88-L95"


def test_unknown_or_malformed_id(agent):
    assert agent.get("/api/v1/lessons/424242").status_code == 404
    response = agent.get("/api/v1/lessons/forty-two")
    assert response.status_code == 422 and "lesson_id" in response.json()["fields"]


def test_recall_query_count_is_constant(agent, memory, django_assert_num_queries):
    lesson = make_lesson(memory, "Recall me from app.py", refs="app.py")
    agent.get(f"/api/v1/lessons/{lesson.pk}")
    # lesson (+memory, persona, project, interaction), refs, derived_from, confirmations, changes (+batch);
    # the token's scope is cached
    with django_assert_num_queries(5):
        agent.get(f"/api/v1/lessons/{lesson.pk}")
    for i in range(10):
        lesson_update(lesson=lesson, text=f"Recall me from app.py, take {i}", actor=Actor.system("tests"))
        lesson_confirm(lesson=lesson)
    lesson.derived_from.set([make_lesson(memory, f"source {i} in a.py") for i in range(5)])
    with django_assert_num_queries(5):
        assert len(agent.get(f"/api/v1/lessons/{lesson.pk}").json()["history"]) == 11
