"""GET /api/v1/memory/{persona}/{project}/context"""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from memory.models import Lesson, LessonRef
from memory.services import Actor, lesson_delete
from tests.api.conftest import memory_url
from tests.factories import ProjectFactory, make_lesson


def test_text_is_the_compiled_memory(agent, memory, persona, project):
    make_lesson(memory, "Core rule in auth/tokens.py", category="PATTERN", tier="core")
    make_lesson(memory, "Retry loop in queue/worker.py has no backoff", refs="queue/worker.py#L88-L95")
    response = agent.get(memory_url(persona, project, "context"))
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain")
    body = response.content.decode()
    assert body.startswith("## Core Lessons\n- [PATTERN] Core rule in auth/tokens.py")
    assert "## Working Memory\n## 2026-01-01 [OBSERVATION]\n" in body
    assert "- [OBSERVATION] Retry loop in queue/worker.py has no backoff (ref: queue/worker.py#L88-L95)" in body
    assert response["X-Memory-Version"] == str(memory.version)


def test_json_includes_lesson_ids_for_recall(agent, memory, persona, project):
    core = make_lesson(memory, "Core rule in auth/tokens.py", category="PATTERN", tier="core")
    working = make_lesson(memory, "Observed in api/views.py", refs=["api/views.py#L3"])
    response = agent.get(memory_url(persona, project, "context") + "?format=json")
    assert response.status_code == 200
    data = response.json()
    assert data["persona"] == persona.name and data["project"] == project.slug
    assert [item["id"] for item in data["lessons"]] == [core.pk, working.pk]
    assert data["lessons"][1]["refs"] == ["api/views.py#L3"]
    assert data["text"] == agent.get(memory_url(persona, project, "context")).content.decode()
    assert data["version"] == memory.version and data["cut_lesson_ids"] == []


def test_unknown_format_names_the_field(agent, memory, persona, project):
    response = agent.get(memory_url(persona, project, "context") + "?format=xml")
    assert response.status_code == 422
    assert "format" in response.json()["fields"]


def test_memory_without_lessons_is_empty(agent, persona, project):
    response = agent.get(memory_url(persona, project, "context"))
    assert response.status_code == 200 and response.content == b""
    data = agent.get(memory_url(persona, project, "context") + "?format=json").json()
    assert data["lessons"] == [] and data["text"] == ""


def test_every_mutation_shows_at_once(agent, memory, persona, project):
    lesson = make_lesson(memory, "Soon deleted: cache.py holds stale keys")
    url = memory_url(persona, project, "context")
    assert "stale keys" in agent.get(url).content.decode()
    assert "stale keys" in agent.get(url + "?format=json").json()["text"]
    lesson_delete(lesson=lesson, actor=Actor.system("tests"))
    assert "stale keys" not in agent.get(url).content.decode()
    assert "stale keys" not in agent.get(url + "?format=json").json()["text"]


def _bulk_lessons(memory, n):
    # Bulk rows keep the test fast; the version bump stands in for the service's invalidation.
    lessons = Lesson.objects.bulk_create(
        Lesson(
            memory=memory,
            category="OBSERVATION",
            text=f"Lesson {i} about mod_{i}.py",
            content_hash=f"{i:064d}",
            section=i,
        )
        for i in range(n)
    )
    LessonRef.objects.bulk_create(LessonRef(lesson=lesson, path=f"src/mod_{i}.py") for i, lesson in enumerate(lessons))
    memory.version += 1
    memory.save(update_fields=["version"])


def _count_queries(agent, url):
    with CaptureQueriesContext(connection) as ctx:
        response = agent.get(url)
    assert response.status_code == 200
    return len(ctx.captured_queries)


def test_query_count_does_not_grow_with_lessons(agent, memory, persona, project, settings, django_assert_num_queries):
    settings.MEMORY_VERSION_CACHE_SECONDS = 0  # the memory's version read from the database every time
    url = memory_url(persona, project, "context")
    make_lesson(memory, "Core rule in auth/tokens.py", category="PATTERN", tier="core", refs="auth/tokens.py")
    agent.get(memory_url(persona, project, "prompt"))  # first use of the token records last_used_at
    _bulk_lessons(memory, 10)
    # Compiling: memory, must-keep lessons, core lessons with refs, working lessons with refs (one
    # page each: the first page is larger than a budget holds). The token's scope is cached.
    with django_assert_num_queries(4):
        agent.get(url)
    # A hit: the memory's version only; the text is cached per version.
    with django_assert_num_queries(1):
        agent.get(url)
    _bulk_lessons(memory, 990)
    with django_assert_num_queries(4):
        assert agent.get(url).status_code == 200
    with django_assert_num_queries(1):
        agent.get(url)


def test_a_hit_runs_no_query_with_the_versions_cache(agent, memory, persona, project, django_assert_num_queries):
    # Every process shares the versions cache (files next to SQLite, or Redis): writes clear it.
    url = memory_url(persona, project, "context")
    lesson = make_lesson(memory, "Cached: queue/worker.py retries forever")
    agent.get(memory_url(persona, project, "prompt"))
    assert "retries forever" in agent.get(url).content.decode()
    with django_assert_num_queries(0):
        response = agent.get(url)
    assert "retries forever" in response.content.decode()
    with django_assert_num_queries(0):
        assert agent.client.get(url, headers={**agent.headers, "If-None-Match": response["ETag"]}).status_code == 304
    lesson_delete(lesson=lesson, actor=Actor.system("tests"))
    assert "retries forever" not in agent.get(url).content.decode()
    memory.working_char_budget = 10  # an edit of the budgets changes the text too
    memory.save()
    make_lesson(memory, "A lesson far longer than ten characters")
    memory.refresh_from_db()
    memory.working_char_budget = 10_000
    memory.save()
    assert "far longer" in agent.get(url).content.decode()


def test_json_query_count_does_not_grow_with_lessons(
    agent, memory, persona, project, settings, django_assert_num_queries
):
    settings.MEMORY_VERSION_CACHE_SECONDS = 0
    url = memory_url(persona, project, "context") + "?format=json"
    make_lesson(memory, "Core rule in auth/tokens.py", category="PATTERN", tier="core", refs="auth/tokens.py")
    agent.get(memory_url(persona, project, "prompt"))
    _bulk_lessons(memory, 10)
    small = _count_queries(agent, url)
    _bulk_lessons(memory, 990)
    # memory, must-keep lessons, core and working lessons with refs to compile, the cut ids, kept lessons + refs.
    with django_assert_num_queries(small):
        data = agent.get(url).json()
    assert small == 7
    assert len(data["lessons"]) + len(data["cut_lesson_ids"]) == 1001
    with django_assert_num_queries(1):
        agent.get(url)


def test_etag_spares_an_unchanged_text(agent, memory, persona, project):
    make_lesson(memory, "Etags follow the version in api/views.py")
    url = memory_url(persona, project, "context")
    first = agent.get(url)
    etag = first["ETag"]
    again = agent.client.get(url, headers={**agent.headers, "If-None-Match": etag})
    assert again.status_code == 304 and again.content == b""
    make_lesson(memory, "A new lesson changes the version")
    changed = agent.client.get(url, headers={**agent.headers, "If-None-Match": etag})
    assert changed.status_code == 200 and "A new lesson" in changed.content.decode()
    assert changed["ETag"] != etag


def test_the_memory_a_read_finds_holds_its_stored_settings(agent, memory, persona, project):
    # The cached lookup fills what compiling needs; any other field is read from the database, never a default.
    from memory.api.selectors import read_scope
    from memory.tokens import agent_token_authenticate

    memory.max_working_lines = 42
    memory.save()
    make_lesson(memory, "Settings follow the memory in api/selectors.py")
    agent.get(memory_url(persona, project, "context"))  # cached now
    token = agent_token_authenticate(agent.headers["Authorization"].split(" ", 1)[1], cached=True)
    _, _, found = read_scope(token, persona.name, project.slug)
    memory.refresh_from_db()
    assert (found.pk, found.version, found.core_char_budget) == (memory.pk, memory.version, memory.core_char_budget)
    assert found.max_working_lines == 42


def _answer(response):
    headers = {
        k: response[k]
        for k in ("Content-Type", "ETag", "X-Memory-Version", "WWW-Authenticate")
        if response.has_header(k)
    }
    return response.status_code, headers, response.content


@pytest.fixture
def answers(agent, client, memory, persona, project, other_persona, make_agent):
    """Every kind of context request, and the answer to each."""
    make_lesson(memory, "Core rule in auth/tokens.py", category="PATTERN", tier="core")
    make_lesson(memory, "Retry loop in queue/worker.py has no backoff", refs="queue/worker.py#L88-L95")
    url = memory_url(persona, project, "context")
    etag = agent.get(url)["ETag"]
    other_project_agent, _ = make_agent(persona, project=ProjectFactory(slug="elsewhere"), name="scoped")

    def collect():
        return {
            "hit": _answer(agent.get(url)),
            "304": _answer(agent.get(url, HTTP_IF_NONE_MATCH=etag)),
            "stale etag": _answer(agent.get(url, HTTP_IF_NONE_MATCH='"m1-v0-b1.1"')),
            "json": _answer(agent.get(url + "?format=json")),
            "bad format": _answer(agent.get(url + "?format=xml")),
            "no token": _answer(client.get(url)),
            "bad token": _answer(client.get(url, headers={"Authorization": "Bearer nwm_nope"})),
            "basic auth": _answer(client.get(url, headers={"Authorization": "Basic eDp5"})),
            "other persona": _answer(agent.get(memory_url(other_persona, project, "context"))),
            "unknown persona": _answer(agent.get(f"/api/v1/memory/Nobody/{project.slug}/context")),
            "unknown project": _answer(agent.get(f"/api/v1/memory/{persona.name}/no-such-project/context")),
            "out of project": _answer(other_project_agent.get(url)),
            "post": _answer(agent.post(url, {})),
        }

    return collect


def test_the_short_way_answers_exactly_as_the_api_view(answers, settings):
    short = answers()
    assert short["hit"][0] == 200 and short["304"][0] == 304 and short["json"][0] == 200
    assert {short[k][0] for k in ("no token", "bad token", "basic auth")} == {401}
    assert short["other persona"][0] == 403 and short["unknown persona"][0] == 404
    assert short["out of project"][0] == 403 and short["post"][0] == 405
    assert short["hit"][2].startswith(b"## Core Lessons") and short["stale etag"] == short["hit"]
    settings.ROOT_URLCONF = "tests.api.api_view_only_urls"
    assert answers() == short


def test_a_hit_takes_the_short_way(agent, memory, persona, project, monkeypatch):
    from django.urls import resolve

    from memory.api import views

    make_lesson(memory, "Core rule in auth/tokens.py", category="PATTERN", tier="core")
    url = memory_url(persona, project, "context")
    assert resolve(url).func is views.memory_context_text
    monkeypatch.setattr(views, "api_view", lambda name: pytest.fail("a hit went to the API view"))
    assert agent.get(url).content.decode().startswith("## Core Lessons")
