"""From its expires_on day, a lesson is in nothing an agent or Night Watch reads: compiled memory
(cached or not), the API's context, prompt and searches, the prompt page, the persona's prompt,
and both export layouts. Read the day before (caches filled), on the day and a month later, with
the clock moved; the MCP server's resource and tools are checked in tests/mcp."""

import io
from datetime import date

import pytest
import time_machine
from django.core.management import call_command

from memory import services
from memory.api.selectors import context_payload
from memory.models import Memory
from memory.selectors import compile_memory, compiled_memory_text
from memory.tokens import agent_token_create
from personas.compiler import compile_system_prompt_for
from tests.api.conftest import AgentClient, memory_url
from tests.factories import make_lesson

THE_DAY = date(2026, 3, 9)
EXPIRING = ("Deploys are frozen for the migration week", "Payments go through the legacy gateway")
KEPT = ("Deploy with make deploy", "Card numbers are never logged")


@pytest.fixture
def dated(memory, approver):
    working = make_lesson(memory, EXPIRING[0], refs="deploy/Makefile")
    core = make_lesson(memory, EXPIRING[1], tier="core", category="DECISION", refs="pay/gateway.py")
    make_lesson(memory, KEPT[0], refs="deploy/Makefile")
    make_lesson(memory, KEPT[1], tier="core", category="DECISION")
    services.lesson_set_expiry(lesson=working, expires_on=THE_DAY, actor=services.Actor.system("tests"))
    # A core lesson expires only by a person's decision.
    services.lesson_set_expiry(lesson=core, expires_on=THE_DAY, actor=services.Actor.for_user(approver))
    return working, core


def everything_read(agent, viewer_client, memory, tmp_path, day):
    """{surface: text} of every reader, on `day`."""
    memory = Memory.objects.get(pk=memory.pk)
    persona, project = memory.persona, memory.project
    texts = {
        "compiled": compile_memory(memory).text,
        "compiled, cached": compiled_memory_text(memory),
        "context payload": " ".join(item["text"] for item in context_payload(memory)["lessons"]),
        "api context": agent.get(memory_url(persona, project, "context")).content.decode(),
        "api context json": agent.get(memory_url(persona, project, "context") + "?format=json").content.decode(),
        "api prompt": agent.get(memory_url(persona, project, "prompt")).content.decode(),
        "api lessons": agent.get(memory_url(persona, project, "lessons")).content.decode(),
        "api lessons by path": agent.get(memory_url(persona, project, "lessons"), {"path": "deploy/"}).content.decode(),
        "api lessons by words": agent.get(
            memory_url(persona, project, "lessons"), {"words": "frozen"}
        ).content.decode(),
        "prompt page": viewer_client.get(memory.prompt_url()).content.decode(),
        "persona prompt": compile_system_prompt_for(persona, project),
    }
    for layout in ("nightwatch", "workspace"):
        root = tmp_path / f"{layout}-{day.isoformat()}"
        call_command("export_memory", str(root), "--layout", layout, stdout=io.StringIO())
        texts[f"export {layout}"] = "\n".join(p.read_text() for p in sorted(root.rglob("*.md")))
    return texts


@pytest.mark.parametrize("day", [THE_DAY, date(2026, 4, 9)])
def test_no_surface_serves_a_lesson_from_its_expires_on_day(client, client_for, viewer, memory, dated, tmp_path, day):
    agent = AgentClient(client, agent_token_create(persona=memory.persona, name="tests")[1])
    viewer_client = client_for(viewer)
    with time_machine.travel(date(2026, 3, 8)):
        before = everything_read(agent, viewer_client, memory, tmp_path, date(2026, 3, 8))
    for surface, text in before.items():
        if surface == "api lessons by words":
            assert EXPIRING[0] in text, surface
            continue
        if surface == "api lessons by path":
            assert EXPIRING[0] in text and KEPT[0] in text, surface
            continue
        assert all(lesson in text for lesson in EXPIRING + KEPT), (surface, text)

    with time_machine.travel(day):
        after = everything_read(agent, viewer_client, memory, tmp_path, day)
    for surface, text in after.items():
        assert not any(lesson in text for lesson in EXPIRING), (surface, text)
        if surface not in ("api lessons by words", "api lessons by path"):
            assert all(lesson in text for lesson in KEPT), (surface, text)
    assert KEPT[0] in after["api lessons by path"]
