"""A token reaches only its persona (and project when scoped); a revoked token is refused."""

import json
import urllib.error
import urllib.request

import pytest
from mcp.shared.exceptions import MCPError

from memory.models import AgentToken, ChangeBatch, Lesson, Memory
from tests.factories import MemoryFactory, make_lesson
from tests.mcp.conftest import text_of

pytestmark = pytest.mark.django_db(transaction=True)


def test_other_persona_and_other_project_are_tool_errors(
    transport, make_token, persona, project, memory, other_persona, other_project
):
    theirs = make_lesson(MemoryFactory(persona=other_persona, project=project), "Maya's lesson in app.py")
    elsewhere = make_lesson(MemoryFactory(persona=persona, project=other_project), "Lesson of the other project")
    _, raw = make_token(persona, project)
    before = (Lesson.objects.count(), ChangeBatch.objects.count(), Memory.objects.count())

    async def steps(client):
        calls = {
            "persona": ("get_memory", {"persona": other_persona.name}),
            "project": ("get_memory", {"project": other_project.slug}),
            "write elsewhere": ("save_fact", {"text": "Sneaky fact", "project": other_project.slug}),
            "write as Maya": ("log_learning", {"text": "Sneaky learning", "persona": other_persona.name}),
            "recall theirs": ("recall", {"lesson_id": theirs.pk}),
            "recall elsewhere": ("recall", {"lesson_id": elsewhere.pk}),
            "unknown project": ("find_lessons", {"project": "no-such-project"}),
            "unknown lesson": ("recall", {"lesson_id": 987654}),
        }
        results = {label: await client.call_tool(name, args) for label, (name, args) in calls.items()}
        try:
            await client.read_resource(f"memory://{other_persona.name}/{project.slug}")
        except MCPError as exc:
            results["resource"] = exc
        return results

    results = transport.run(raw, steps)
    assert all(results[label].is_error for label in results if label != "resource")
    assert f"this token cannot reach the memory of persona '{other_persona.name}'" in text_of(results["persona"])
    assert f"this token is limited to project '{project.slug}'" in text_of(results["project"])
    assert f"this token is limited to project '{project.slug}'" in text_of(results["write elsewhere"])
    assert "cannot reach the memory of persona 'Maya'" in text_of(results["write as Maya"])
    assert "belongs to another persona's memory" in text_of(results["recall theirs"])
    assert f"limited to project '{project.slug}'" in text_of(results["recall elsewhere"])
    assert "no project with slug 'no-such-project'" in text_of(results["unknown project"])
    assert "no lesson 987654" in text_of(results["unknown lesson"])
    assert "cannot reach the memory of persona 'Maya'" in str(results["resource"])
    assert (Lesson.objects.count(), ChangeBatch.objects.count(), Memory.objects.count()) == before


def test_unscoped_token_must_name_the_project(transport, make_token, persona, project, memory):
    make_lesson(memory, "Any project's lesson in a.py")
    _, raw = make_token(persona)

    async def steps(client):
        return [
            await client.call_tool("get_memory", {}),
            await client.call_tool("get_memory", {"project": project.slug}),
        ]

    missing, named = transport.run(raw, steps)
    assert missing.is_error and "name the project" in text_of(missing)
    assert not named.is_error and "Any project's lesson" in text_of(named)


def test_revoked_token_is_refused_from_the_next_request(transport, make_token, persona, project, memory):
    token, raw = make_token(persona, project)

    async def steps(client):
        first = await client.call_tool("get_memory", {})
        await transport.revoke(token)
        try:
            await client.call_tool("save_fact", {"text": "Written after revocation"})
        except MCPError as exc:
            return first, exc
        return first, None

    first, refused = transport.run(raw, steps)
    assert not first.is_error
    assert refused is not None, "the call after revocation was served"
    if transport.name == "stdio":
        assert "this agent token is revoked or unknown" in str(refused)
    else:  # the SDK client reports the 401 as an error response; its body is checked below
        assert "error response" in str(refused)
    assert AgentToken.objects.get(pk=token.pk).revoked_at is not None
    assert not Lesson.objects.filter(text="Written after revocation").exists()


def post(url, authorization=None):
    """(status, headers, body) of a tools/list request sent by hand."""
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}).encode()
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    if authorization:
        headers["Authorization"] = authorization
    try:
        with urllib.request.urlopen(urllib.request.Request(url, data=body, headers=headers), timeout=30) as response:
            return response.status, response.headers, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers, exc.read()


def test_http_endpoint_answers_401_without_a_live_token(mcp_http, make_token, persona, project):
    token, raw = make_token(persona, project)
    assert post(mcp_http.url, f"Bearer {raw}")[0] == 200
    for value in (None, "Bearer nwm_not-a-real-token", "Basic abc"):
        status, headers, body = post(mcp_http.url, value)
        assert status == 401
        assert headers["www-authenticate"] == "Bearer"
        assert json.loads(body)["detail"].startswith("a valid agent token is required")
    token.revoked_at = token.created_at
    token.save(update_fields=["revoked_at"])
    assert post(mcp_http.url, f"Bearer {raw}")[0] == 401

    async def steps(client):
        return await client.list_tools()

    with pytest.raises(BaseException) as refused:
        mcp_http.run(raw, steps)
    assert "Server returned an error response" in repr(
        refused.value.exceptions if hasattr(refused.value, "exceptions") else refused.value
    )
