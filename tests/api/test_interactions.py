"""POST /api/v1/memory/{persona}/{project}/interactions and GET /api/v1/interactions/{id}"""

import pytest

from memory.models import Interaction, Lesson, Memory
from tests.api.conftest import memory_url

BODY = {
    "trigger_type": "pr_review",
    "outcome": "changes requested",
    "summary": "The login view in auth/views.py skips the rate limiter for SSO users.",
    "files_changed": ["auth/views.py#L40-L52", "auth/sso.py"],
    "transcript": [{"id": "m1", "role": "assistant", "text": "Rate limiter missing on SSO path"}],
}


def test_submit_returns_202_and_reflects_in_process(agent, persona, project, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        response = agent.post(memory_url(persona, project, "interactions"), BODY)
    assert response.status_code == 202
    data = response.json()
    interaction = Interaction.objects.get(pk=data["id"])
    assert interaction.trigger_type == "pr_review" and interaction.files_changed == BODY["files_changed"]
    assert interaction.transcript[0]["id"] == "m1"
    assert interaction.agent_token is not None
    # No broker: the reflection runs in-process once the request's transaction commits (offline engine).
    interaction.refresh_from_db()
    assert interaction.status == "reflected"
    lesson = Lesson.objects.get(interaction=interaction)
    assert lesson.category == "OBSERVATION" and lesson.tier == "working"
    assert [r.as_text() for r in lesson.refs.all()] == ["auth/views.py#L40-L52", "auth/sso.py"]
    assert "skips the rate limiter" in agent.get(memory_url(persona, project, "context")).content.decode()

    status = agent.get(f"/api/v1/interactions/{interaction.pk}")
    assert status.status_code == 200
    assert status.json()["status"] == "reflected" and status.json()["lesson_ids"] == [lesson.pk]


def test_submit_creates_the_memory_on_first_use(agent, persona, project):
    assert not Memory.objects.exists()
    assert agent.post(memory_url(persona, project, "interactions"), BODY).status_code == 202
    assert Memory.objects.get().persona == persona


@pytest.mark.parametrize(
    "change, field",
    [
        ({"trigger_type": ""}, "trigger_type"),
        ({"trigger_type": "   "}, "trigger_type"),
        ({"trigger_type": "x" * 51}, "trigger_type"),
        ({"summary": None}, "summary"),
        ({"summary": " \n "}, "summary"),
        ({"outcome": "o" * 201}, "outcome"),
        ({"files_changed": "auth/views.py"}, "files_changed"),
        ({"files_changed": ["../etc/passwd"]}, "files_changed"),
        ({"files_changed": ["a.py#L10000000"]}, "files_changed"),
        ({"transcript": [{"role": "user"}]}, "transcript.0.id"),
    ],
)
def test_bad_input_names_the_field_and_writes_nothing(agent, persona, project, change, field):
    body = {**BODY, **change}
    if change.get("summary", "") is None:
        del body["summary"]
    response = agent.post(memory_url(persona, project, "interactions"), body)
    assert response.status_code == 422
    data = response.json()
    assert any(key.startswith(field) for key in data["fields"]), data
    assert field.split(".")[0] in data["detail"]
    assert not Interaction.objects.exists() and not Memory.objects.exists()


def test_body_that_is_not_json_is_refused(agent, persona, project):
    response = agent.post(memory_url(persona, project, "interactions"), "{not json", content_type="application/json")
    assert response.status_code == 400
    assert response.json()["detail"] == "the request body is not valid JSON" and "body" in response.json()["fields"]
    assert not Interaction.objects.exists()


def test_oversized_body_is_413_and_writes_nothing(agent, persona, project, settings):
    settings.API_MAX_BODY_BYTES = 2048
    body = {**BODY, "summary": "x" * 3000}
    response = agent.post(memory_url(persona, project, "interactions"), body)
    assert response.status_code == 413
    assert "2048 bytes" in response.json()["detail"]
    assert not Interaction.objects.exists() and not Memory.objects.exists()


def test_unknown_interaction_is_404(agent):
    assert agent.get("/api/v1/interactions/999999").status_code == 404
    assert agent.get("/api/v1/interactions/abc").status_code == 422
