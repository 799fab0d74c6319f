"""Each tool's happy path, through the SDK's client, over stdio and streamable HTTP."""

import pytest

from memory.models import ChangeBatch, Interaction, Lesson, LessonConfirmation
from memory.services import Actor, lesson_update
from tests.factories import make_lesson
from tests.mcp.conftest import text_of

pytestmark = pytest.mark.django_db(transaction=True)  # the server reads the database from other threads or processes

TOOLS = [
    "get_memory",
    "recall",
    "find_lessons",
    "save_fact",
    "log_learning",
    "log_error",
    "set_expiry",
    "daily_log",
    "report_interaction",
]


def test_list_tools_with_descriptions_written_for_a_model(transport, make_token, persona, project):
    _, raw = make_token(persona, project)

    async def steps(client):
        return (await client.list_tools()).tools

    tools = {tool.name: tool for tool in transport.run(raw, steps)}
    assert sorted(tools) == sorted(TOOLS)
    for tool in tools.values():
        assert len(tool.description) > 150, tool.name  # says when to call it and what comes back
    assert tools["get_memory"].annotations.read_only_hint is True
    assert tools["save_fact"].annotations.destructive_hint is False
    assert "cannot make a lesson core" in tools["save_fact"].description
    assert set(tools["log_error"].input_schema["required"]) == {"text", "error"}
    schema = tools["save_fact"].input_schema["properties"]
    assert "src/auth/middleware.py#L23-L30" in str(schema["refs"])
    # Nothing a person decides is reachable: no approve, apply, revert or prompt editing.
    assert not any(word in name for name in tools for word in ("approve", "apply", "revert", "prompt", "delete"))


def test_get_memory_returns_the_compiled_memory_with_ids(transport, make_token, persona, project, memory):
    core = make_lesson(
        memory, "Payments go through the outbox table", category="DECISION", tier="core", refs="src/outbox.py"
    )
    working = make_lesson(memory, "The nightly export takes about four minutes", refs="jobs/export.py#L10-L20")
    _, raw = make_token(persona, project)

    async def steps(client):
        return await client.call_tool("get_memory", {})

    result = transport.run(raw, steps)
    assert not result.is_error
    text = text_of(result)
    assert text.index("## Core Lessons") < text.index("## Working Memory")
    assert f"- [{core.pk}] [DECISION] Payments go through the outbox table (ref: src/outbox.py)" in text
    assert f"- [{working.pk}] [OBSERVATION] The nightly export takes about four minutes" in text
    assert "recall tool" in text
    data = result.structured_content
    assert data["persona"] == persona.name and data["project"] == project.slug
    assert data["version"] == memory.__class__.objects.get(pk=memory.pk).version
    assert [lesson["id"] for lesson in data["lessons"]] == [core.pk, working.pk]


def test_appending_tools_write_working_lessons_as_the_api_does(transport, make_token, persona, project):
    token, raw = make_token(persona, project)

    async def steps(client):
        return [
            await client.call_tool(
                "save_fact",
                {"text": "Jobs live in memory/tasks.py", "category": "ARCHITECTURE", "refs": ["memory/tasks.py"]},
            ),
            await client.call_tool("log_learning", {"text": "pytest -k narrows the run", "relevance": "high"}),
            await client.call_tool(
                "log_error", {"text": "Run migrations before tests", "error": "no such table:\n memory_lesson"}
            ),
            await client.call_tool("daily_log", {"text": "Finished the export command"}),
            # The same fact again is a confirmation, not a copy.
            await client.call_tool("save_fact", {"text": "Jobs live in memory/tasks.py", "category": "ARCHITECTURE"}),
        ]

    results = transport.run(raw, steps)
    assert [r.is_error for r in results] == [False] * 5
    lessons = list(Lesson.objects.order_by("id"))
    assert [(lesson.tier, lesson.category, lesson.text, lesson.relevance) for lesson in lessons] == [
        ("working", "ARCHITECTURE", "Jobs live in memory/tasks.py", "medium"),
        ("working", "OBSERVATION", "pytest -k narrows the run", "high"),
        ("working", "OBSERVATION", "Run migrations before tests — error: no such table: memory_lesson", "medium"),
        ("working", "OBSERVATION", "Finished the export command", "low"),
    ]
    assert [r.as_text() for r in lessons[0].refs.all()] == ["memory/tasks.py"]
    assert f"Saved lesson {lessons[0].pk} to working memory as ARCHITECTURE" in text_of(results[0])
    assert results[4].structured_content["lessons"][0] == {
        "id": lessons[0].pk,
        "status": "confirmed",
        "tier": "working",
        "category": "ARCHITECTURE",
        "text": "Jobs live in memory/tasks.py",
        "expires_on": None,
        "expires_when": "",
    }
    assert "counted as a confirmation" in text_of(results[4])
    assert LessonConfirmation.objects.filter(lesson=lessons[0]).count() == 1
    # Every write is in history, with the token as the actor.
    batches = list(ChangeBatch.objects.order_by("id"))
    assert len(batches) == 4
    assert {(b.kind, b.actor_type, b.actor_label) for b in batches} == {
        ("agent", "agent", f"agent token {token.prefix}")
    }
    assert {b.changes.get().lesson_id for b in batches} == {lesson.pk for lesson in lessons}


def test_recall_shows_provenance_and_history(transport, make_token, persona, project, memory):
    interaction = Interaction.objects.create(
        memory=memory,
        trigger_type="pr_review",
        outcome="merged",
        summary="Reviewed the retry loop",
        transcript=[
            {"id": "m1", "role": "user", "text": "the delays are fixed"},
            {"id": "m2", "role": "assistant", "text": "use backoff"},
        ],
    )
    lesson = make_lesson(
        memory,
        "Retries in worker.py need backoff",
        refs="src/worker.py#L88-L95",
        interaction=interaction,
        source_entry_ids=["m2"],
    )
    lesson_update(
        lesson=lesson,
        text="Retries in src/worker.py need exponential backoff",
        actor=Actor.system("tests"),
        reason="more precise",
    )
    _, raw = make_token(persona)

    async def steps(client):
        return await client.call_tool("recall", {"lesson_id": lesson.pk})

    result = transport.run(raw, steps)
    assert not result.is_error
    data = result.structured_content
    assert data["text"] == "Retries in src/worker.py need exponential backoff"
    assert data["interaction"]["summary"] == "Reviewed the retry loop"
    assert data["source_entries"] == [{"id": "m2", "role": "assistant", "text": "use backoff"}]
    assert [h["action"] for h in data["history"]] == ["create", "update"]
    assert '"use backoff"' in text_of(result)


def test_find_lessons_by_folder_category_and_words(transport, make_token, persona, project, memory):
    auth = make_lesson(memory, "Session cookies are rotated at login", refs="src/auth/session.py")
    make_lesson(
        memory,
        "Login throttling lives in the auth middleware",
        category="PATTERN",
        refs="src/auth/middleware.py#L10-L30",
    )
    make_lesson(memory, "Exports are written atomically", refs="src/export.py")
    _, raw = make_token(persona, project)

    async def steps(client):
        return [
            await client.call_tool("find_lessons", {"path": "src/auth/"}),
            await client.call_tool("find_lessons", {"path": "src/auth/", "category": "OBSERVATION"}),
            await client.call_tool("find_lessons", {"words": "cookies LOGIN"}),
            await client.call_tool("find_lessons", {"limit": 1}),
        ]

    folder, observations, words, first = transport.run(raw, steps)
    assert folder.structured_content["count"] == 2
    assert [i["id"] for i in observations.structured_content["items"]] == [auth.pk]
    assert [i["id"] for i in words.structured_content["items"]] == [auth.pk]
    assert f"- [{auth.pk}] [OBSERVATION] Session cookies are rotated at login (ref: src/auth/session.py)" in text_of(
        words
    )
    assert first.structured_content["next_offset"] == 1 and "next page: offset=1" in text_of(first)


def test_report_interaction_is_reflected_into_lessons(transport, make_token, persona, project):
    token, raw = make_token(persona, project)

    async def steps(client):
        return await client.call_tool(
            "report_interaction",
            {
                "trigger_type": "bug_fix",
                "outcome": "fixed",
                "summary": "The export job timed out because it loaded every lesson at once",
                "files_changed": ["jobs/export.py#L40-L60"],
                "transcript": [{"id": "e1", "role": "user", "text": "why is the export slow?"}],
            },
        )

    result = transport.run(raw, steps)
    assert not result.is_error
    interaction = Interaction.objects.get()
    assert interaction.agent_token_id == token.pk and interaction.trigger_type == "bug_fix"
    assert interaction.transcript[0]["id"] == "e1"
    data = result.structured_content
    assert data["id"] == interaction.pk
    # Tasks run in-process here, so the offline reflection has already produced its lesson.
    assert data["status"] == interaction.status == "reflected"
    lesson = Lesson.objects.get(interaction=interaction)
    assert data["lesson_ids"] == [lesson.pk]
    assert f"Interaction {interaction.pk} is reflected; lessons {lesson.pk}." == text_of(result)


@pytest.mark.parametrize("scoped", [True, False])
def test_resources_list_each_readable_project_and_read_its_memory(
    transport, make_token, persona, project, memory, other_project, scoped
):
    lesson = make_lesson(memory, "Feature flags are read once per request", refs="config/flags.yml")
    _, raw = make_token(persona, project if scoped else None)

    async def steps(client):
        listed = (await client.list_resources()).resources
        templates = (await client.list_resource_templates()).resource_templates
        read = await client.read_resource(listed[[r.name for r in listed].index(f"memory-{project.slug}")].uri)
        return listed, templates, read

    listed, templates, read = transport.run(raw, steps)
    expected = [project] if scoped else sorted([project, other_project], key=lambda p: p.slug)
    assert [r.name for r in listed] == [f"memory-{p.slug}" for p in expected]
    assert str(listed[0].uri).startswith(f"memory://{persona.name.replace(' ', '%20')}/")
    assert listed[0].mime_type == "text/plain"
    assert [t.uri_template for t in templates] == ["memory://{persona}/{project}"]
    assert f"- [{lesson.pk}] [OBSERVATION] Feature flags are read once per request" in read.contents[0].text
