"""Agents over MCP see the refs the last check found no longer true, marked as compiled memory marks them."""

import pytest

from memory.refs.scratch import ScratchRepo, numbered_source
from memory.refs.services import refs_check_project
from tests.factories import MemoryFactory, PersonaFactory, ProjectFactory, make_lesson
from tests.mcp.conftest import text_of

pytestmark = pytest.mark.django_db(transaction=True)


def test_find_lessons_and_get_memory_mark_stale_refs(mcp_http, make_token, tmp_path):
    repo = ScratchRepo(tmp_path / "checkout")
    repo.write("src/app.py", numbered_source("app", 20))
    repo.commit("first")
    persona = PersonaFactory()
    memory = MemoryFactory(persona=persona, project=ProjectFactory(checkout_path=str(repo.path)))
    stale = make_lesson(memory, "Step five parses the body", refs="src/app.py#L5")  # anchored once committed
    make_lesson(memory, "Step nine answers", refs="src/app.py#L9")
    repo.replace_line("src/app.py", 5, "body = None")
    repo.commit("edit")
    refs_check_project(project=memory.project)
    _, raw = make_token(persona, memory.project)

    async def steps(client):
        return [await client.call_tool("find_lessons", {}), await client.call_tool("get_memory", {})]

    found, compiled = mcp_http.run(raw, steps)
    assert f"[{stale.pk}] [OBSERVATION] Step five parses the body (ref: src/app.py#L5, stale)" in text_of(found)
    assert "Step nine answers (ref: src/app.py#L9)" in text_of(found)
    statuses = {i["id"]: i["refs"][0]["status"] for i in found.structured_content["items"]}
    assert statuses[stale.pk] == "changed"
    assert "Step five parses the body (ref: src/app.py#L5, stale)" in text_of(compiled)
