"""Agents date their working lessons over MCP: the writing tools take an expiry, set_expiry changes one."""

from datetime import date

import pytest
import time_machine

from memory import services
from memory.models import Change, ChangeBatch, Lesson
from tests.factories import make_lesson
from tests.mcp.conftest import text_of

pytestmark = pytest.mark.django_db(transaction=True)


def test_writing_tools_take_an_expiry(transport, make_token, persona, project):
    _, raw = make_token(persona, project)

    async def steps(client):
        return [
            await client.call_tool(
                "save_fact",
                {
                    "text": "Skip the e2e suite until the 2.3 rollout reaches 100 %",
                    "expires_when": "the 2.3 rollout reaches 100 %",
                },
            ),
            await client.call_tool("daily_log", {"text": "Deploys frozen this week", "expires_on": "2026-03-09"}),
        ]

    fact, log = transport.run(raw, steps)
    assert not fact.is_error and not log.is_error, text_of(fact) + text_of(log)
    assert "(until the 2.3 rollout reaches 100 %)" in text_of(fact)
    assert fact.structured_content["lessons"][0]["expires_when"] == "the 2.3 rollout reaches 100 %"
    assert log.structured_content["lessons"][0]["expires_on"] == "2026-03-09"
    got = {lesson.text: (lesson.expires_on, lesson.expires_when) for lesson in Lesson.objects.all()}
    assert got == {
        "Skip the e2e suite until the 2.3 rollout reaches 100 %": (None, "the 2.3 rollout reaches 100 %"),
        "Deploys frozen this week": (date(2026, 3, 9), ""),
    }


def test_set_expiry_dates_and_undates_a_working_lesson(mcp_http, make_token, persona, project, memory):
    lesson = make_lesson(memory, "Use the legacy login until the SSO cutover")
    _, raw = make_token(persona, project)

    async def steps(client):
        return [
            await client.call_tool("set_expiry", {"lesson_id": lesson.pk, "expires_when": "the SSO cutover"}),
            await client.call_tool("set_expiry", {"lesson_id": lesson.pk, "expires_when": "the SSO cutover"}),
        ]

    first, again = mcp_http.run(raw, steps)
    assert not first.is_error, text_of(first)
    assert f"Lesson {lesson.pk} now (until the SSO cutover)" in text_of(first)
    assert first.structured_content["expires_when"] == "the SSO cutover"
    assert "nothing changed" in text_of(again)
    lesson.refresh_from_db()
    assert lesson.expires_when == "the SSO cutover"
    batch = Change.objects.filter(lesson=lesson).latest("id").batch
    assert batch.kind == ChangeBatch.Kind.AGENT and ChangeBatch.objects.filter(kind="agent").count() == 1

    async def clear(client):
        return await client.call_tool("set_expiry", {"lesson_id": lesson.pk})

    result = mcp_http.run(raw, clear)
    assert "(permanent)" in text_of(result)
    lesson.refresh_from_db()
    assert (lesson.expires_on, lesson.expires_when) == (None, "")


def test_refusals_say_why_and_write_nothing(mcp_http, make_token, persona, project, memory):
    core = make_lesson(memory, "Never log card numbers", tier="core", category="DECISION")
    working = make_lesson(memory, "Use the old build image for now")
    retired = make_lesson(memory, "Old advice")
    services.lesson_delete(lesson=retired, actor=services.Actor.system())
    _, raw = make_token(persona, project)
    changes = Change.objects.count()

    async def steps(client):
        return {
            "core": await client.call_tool("set_expiry", {"lesson_id": core.pk, "expires_on": "2027-01-01"}),
            "date": await client.call_tool("set_expiry", {"lesson_id": working.pk, "expires_on": "1.3.2027"}),
            "retired": await client.call_tool("set_expiry", {"lesson_id": retired.pk, "expires_on": "2027-01-01"}),
            "unknown": await client.call_tool("set_expiry", {"lesson_id": 10**9, "expires_on": "2027-01-01"}),
            "append": await client.call_tool("log_learning", {"text": "A lesson", "expires_on": "2027-02-30"}),
        }

    results = mcp_http.run(raw, steps)
    assert all(result.is_error for result in results.values())
    assert "core lesson" in text_of(results["core"]) and "person" in text_of(results["core"])
    assert "expires_on" in text_of(results["date"]) and "YYYY-MM-DD" in text_of(results["date"])
    assert "deleted" in text_of(results["retired"])
    assert "no lesson" in text_of(results["unknown"])
    assert "nothing was written" in text_of(results["append"])
    assert Change.objects.count() == changes and Lesson.objects.count() == 3
    assert not Lesson.objects.filter(expires_on__isnull=False).exists()


def test_a_lesson_dated_over_mcp_leaves_the_resource_on_its_day(mcp_http, make_token, persona, project, memory):
    lesson = make_lesson(memory, "Deploys are frozen for the migration week")
    make_lesson(memory, "Deploy with make deploy")
    _, raw = make_token(persona, project)

    async def set_it(client):
        return await client.call_tool("set_expiry", {"lesson_id": lesson.pk, "expires_on": "2026-03-09"})

    async def read(client):
        listed = (await client.list_resources()).resources
        memory_text = (await client.read_resource(listed[0].uri)).contents[0].text
        return (
            memory_text,
            text_of(await client.call_tool("get_memory", {})),
            text_of(await client.call_tool("find_lessons", {"words": "deploy"})),
        )

    with time_machine.travel(date(2026, 3, 8)):
        assert not mcp_http.run(raw, set_it).is_error
        assert all("frozen" in text for text in mcp_http.run(raw, read))
    with time_machine.travel(date(2026, 3, 9)):
        for text in mcp_http.run(raw, read):
            assert "frozen" not in text and "make deploy" in text
