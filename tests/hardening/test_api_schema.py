"""The OpenAPI schema says what the API does: what it refuses is refused by the schema too, and what
it answers (text/plain, 304, 414) is documented."""

import re

import pytest

from memory.api.views import api
from memory.tokens import agent_token_create
from tests.api.conftest import AgentClient

pytestmark = pytest.mark.django_db


@pytest.fixture
def schema():
    return api.get_openapi_schema()


@pytest.fixture
def agent(client, memory):
    return AgentClient(client, agent_token_create(persona=memory.persona, name="tests")[1])


def _pattern(schema, component, field):
    prop = schema["components"]["schemas"][component]["properties"][field]
    return prop.get("items", prop)


def test_text_responses_are_documented_as_text(schema):
    context = schema["paths"]["/api/v1/memory/{persona}/{project}/context"]["get"]["responses"]
    assert set(context[200]["content"]) == {"application/json", "text/plain"}
    assert 304 in context
    prompt = schema["paths"]["/api/v1/memory/{persona}/{project}/prompt"]["get"]["responses"]
    assert set(prompt[200]["content"]) == {"text/plain"}


def test_every_operation_documents_413_or_414(schema):
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            assert 414 in operation["responses"], (method, path)
            if method == "post":
                assert 413 in operation["responses"], path


def test_an_empty_ref_is_refused_by_the_schema_and_the_api(schema, agent, memory):
    ref = _pattern(schema, "LogLearning", "refs")
    assert ref["minLength"] == 1 and not re.match(ref["pattern"], "")
    url = f"/api/v1/memory/{memory.persona.name}/{memory.project.slug}/lessons"
    response = agent.post(url, {"lessons": [{"tool": "log_learning", "text": "x", "refs": [""]}]})
    assert response.status_code == 422 and "lessons.0.refs.0" in response.json()["fields"]


def test_an_empty_path_filter_is_refused_by_the_schema_and_the_api(schema, agent, memory):
    operation = schema["paths"]["/api/v1/memory/{persona}/{project}/lessons"]["get"]
    path = next(p for p in operation["parameters"] if p["name"] == "path")["schema"]
    assert path["anyOf"][0]["minLength"] == 1 and not re.match(path["pattern"], "")
    response = agent.get(f"/api/v1/memory/{memory.persona.name}/{memory.project.slug}/lessons", {"path": ""})
    assert response.status_code == 422 and "path" in response.json()["fields"]


@pytest.mark.parametrize("at", [0, 1700000000, "1700000000", "2026-03-02 09:15", "2026-03-02T09:15:00"])
def test_a_transcript_time_must_be_rfc3339_with_an_offset(agent, memory, at):
    url = f"/api/v1/memory/{memory.persona.name}/{memory.project.slug}/interactions"
    body = {"trigger_type": "t", "summary": "s", "transcript": [{"id": "m1", "text": "hi", "at": at}]}
    response = agent.post(url, body)
    assert response.status_code == 422
    assert "transcript.0.at" in response.json()["fields"]


def test_a_backwards_range_means_the_same_lines(agent, memory):
    url = f"/api/v1/memory/{memory.persona.name}/{memory.project.slug}/lessons"
    response = agent.post(url, {"lessons": [{"tool": "log_learning", "text": "x", "refs": ["a.py#L20-L10"]}]})
    assert response.status_code == 201
    assert memory.lessons.get().refs.get().as_text() == "a.py#L10-L20"
