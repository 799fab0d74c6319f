"""POST /api/v1/memory/{persona}/{project}/lessons — the workspace tools."""

import pytest

from memory.models import Change, ChangeBatch, Lesson, LessonConfirmation, Memory
from memory.signals import working_lessons_added
from tests.api.conftest import memory_url
from tests.factories import make_lesson


def post(agent, persona, project, *lessons):
    return agent.post(memory_url(persona, project, "lessons"), {"lessons": list(lessons)})


@pytest.mark.parametrize(
    "item, category, text, relevance",
    [
        (
            {"tool": "save_fact", "text": "The API is served by gunicorn with 2 workers"},
            "DECISION",
            "The API is served by gunicorn with 2 workers",
            "medium",
        ),
        (
            {"tool": "save_fact", "text": "Jobs live in memory/tasks.py", "category": "ARCHITECTURE"},
            "ARCHITECTURE",
            "Jobs live in memory/tasks.py",
            "medium",
        ),
        (
            {"tool": "log_learning", "text": "pytest -k narrows the run", "relevance": "high"},
            "OBSERVATION",
            "pytest -k narrows the run",
            "high",
        ),
        (
            {"tool": "log_learning", "text": "Services take keyword arguments", "category": "PATTERN"},
            "PATTERN",
            "Services take keyword arguments",
            "medium",
        ),
        (
            {"tool": "log_error", "text": "Run migrations before tests", "error": "no such table:\n memory_lesson"},
            "OBSERVATION",
            "Run migrations before tests — error: no such table: memory_lesson",
            "medium",
        ),
        (
            {"tool": "daily_log", "text": "Finished the export command"},
            "OBSERVATION",
            "Finished the export command",
            "low",
        ),
    ],
)
def test_tool_mapping(agent, persona, project, item, category, text, relevance):
    response = post(agent, persona, project, item)
    assert response.status_code == 201, response.content
    lesson = Lesson.objects.get()
    assert (lesson.tier, lesson.category, lesson.text, lesson.relevance) == ("working", category, text, relevance)
    assert response.json()["lessons"] == [
        {
            "id": lesson.pk,
            "status": "created",
            "tier": "working",
            "category": category,
            "text": text,
            "expires_on": None,
            "expires_when": "",
        }
    ]
    batch = ChangeBatch.objects.get()
    assert batch.kind == "agent" and batch.actor_type == "agent" and batch.actor_label.startswith("agent token nwm_")


def test_many_lessons_in_one_batch_with_refs(agent, persona, project, django_capture_on_commit_callbacks):
    seen = []
    working_lessons_added.connect(lambda sender, **kw: seen.append(kw), weak=False, dispatch_uid="t-append")
    try:
        with django_capture_on_commit_callbacks(execute=True):
            response = post(
                agent,
                persona,
                project,
                {"tool": "log_learning", "text": "Cache keys carry the version", "refs": ["memory/selectors.py#L110"]},
                {"tool": "save_fact", "text": "Tokens are sha256 hashed", "refs": ["memory/tokens.py"]},
            )
    finally:
        working_lessons_added.disconnect(dispatch_uid="t-append")
    assert response.status_code == 201
    lessons = list(Lesson.objects.order_by("id"))
    assert [r.as_text() for r in lessons[0].refs.all()] == ["memory/selectors.py#L110"]
    assert Change.objects.filter(batch__kind="agent").count() == 2 and ChangeBatch.objects.count() == 1
    assert lessons[0].section == lessons[1].section
    assert seen == [
        {
            "signal": working_lessons_added,
            "memory_id": lessons[0].memory_id,
            "lesson_ids": [lessons[0].pk, lessons[1].pk],
        }
    ]
    assert response.json()["version"] == Memory.objects.get().version


def test_exact_duplicate_confirms_instead_of_copying(agent, persona, project, memory):
    existing = make_lesson(memory, "Cache keys carry the version")
    response = post(agent, persona, project, {"tool": "log_learning", "text": "cache keys  carry the version."})
    assert response.status_code == 201
    assert response.json()["lessons"][0] == {
        "id": existing.pk,
        "status": "confirmed",
        "tier": "working",
        "category": "OBSERVATION",
        "text": "Cache keys carry the version",
        "expires_on": None,
        "expires_when": "",
    }
    assert Lesson.objects.count() == 1
    assert LessonConfirmation.objects.get().lesson == existing


@pytest.mark.parametrize(
    "item, field",
    [
        ({"tool": "remember", "text": "x"}, "lessons.0.tool"),
        ({"tool": "save_fact"}, "lessons.0.text"),
        ({"tool": "save_fact", "text": "   "}, "lessons.0.text"),
        ({"tool": "save_fact", "text": "x" * 2001}, "lessons.0.text"),
        ({"tool": "save_fact", "text": "two\nlines"}, "lessons.0.text"),
        ({"tool": "save_fact", "text": "x", "category": "OBSERVATION"}, "lessons.0.category"),
        ({"tool": "save_fact", "text": "x", "category": "NOPE"}, "lessons.0.category"),
        ({"tool": "log_error", "text": "x"}, "lessons.0.error"),
        ({"tool": "log_learning", "text": "x", "relevance": "critical"}, "lessons.0.relevance"),
        ({"tool": "log_learning", "text": "x", "refs": ["a.py#L0"]}, "lessons.0.refs"),
        ({"tool": "log_learning", "text": "x", "refs": "a.py"}, "lessons.0.refs"),
        ({"tool": "log_error", "text": "x" * 1990, "error": "a long error message"}, "lessons.0.text"),
        ({"tool": "save_fact", "text": "x", "expires_on": "1.3.2026"}, "lessons.0.expires_on"),
        ({"tool": "save_fact", "text": "x", "expires_on": "2026-02-30"}, "lessons.0.expires_on"),
        ({"tool": "save_fact", "text": "x", "expires_on": 1767225600}, "lessons.0.expires_on"),
        ({"tool": "save_fact", "text": "x", "expires_on": "2026-03-01T00:00:00Z"}, "lessons.0.expires_on"),
        ({"tool": "save_fact", "text": "x", "expires_when": "two\nlines"}, "lessons.0.expires_when"),
        ({"tool": "save_fact", "text": "x", "expires_when": "y" * 301}, "lessons.0.expires_when"),
    ],
)
def test_bad_lesson_names_the_field_and_nothing_is_written(agent, persona, project, item, field):
    good = {"tool": "log_learning", "text": "A good lesson about a.py"}
    response = post(agent, persona, project, good, item)
    assert response.status_code == 422, response.content
    fields = response.json()["fields"]
    shifted = field.replace("lessons.0", "lessons.1")
    assert any(key.startswith(shifted) for key in fields), fields
    assert not Lesson.objects.exists() and not ChangeBatch.objects.exists() and not Memory.objects.exists()


def test_empty_or_too_many_lessons_are_refused(agent, persona, project):
    assert agent.post(memory_url(persona, project, "lessons"), {"lessons": []}).status_code == 422
    many = [{"tool": "daily_log", "text": f"entry {i}"} for i in range(21)]
    response = agent.post(memory_url(persona, project, "lessons"), {"lessons": many})
    assert response.status_code == 422 and "lessons" in response.json()["fields"]
    assert not Lesson.objects.exists()


def test_oversized_body_is_413(agent, persona, project, settings):
    settings.API_MAX_BODY_BYTES = 1024
    response = post(agent, persona, project, *[{"tool": "daily_log", "text": "y" * 100}] * 12)
    assert response.status_code == 413
    assert not Lesson.objects.exists()


@pytest.mark.parametrize("category", ["DECISION", "PATTERN", "HYPOTHESIS", "TODO"])
def test_a_category_without_a_tool_is_enough(agent, persona, project, category):
    response = post(agent, persona, project, {"category": category, "text": "Retries back off exponentially"})
    assert response.status_code == 201, response.content
    lesson = Lesson.objects.get()
    assert (lesson.tier, lesson.category, lesson.relevance) == ("working", category, "medium")
    assert ChangeBatch.objects.get().reason == "a lesson through the agent API"


def test_neither_tool_nor_category_is_refused_and_writes_nothing(agent, persona, project):
    response = post(agent, persona, project, {"category": "PATTERN", "text": "fine"}, {"text": "no kind at all"})
    assert response.status_code == 422
    # Without a tool a lesson takes the category-only shape, whose schema requires the category.
    assert response.json()["fields"] == {"lessons.1.category": ["Field required"]}
    assert not Lesson.objects.exists()


def test_a_lesson_written_with_its_expiry(agent, persona, project):
    item = {
        "tool": "save_fact",
        "text": "Skip the e2e suite until the 2.3 rollout reaches 100 %",
        "expires_on": "2026-09-01",
        "expires_when": " the 2.3 rollout reaches 100 % ",
    }
    response = post(agent, persona, project, item, {"category": "TODO", "text": "Write the release notes"})
    assert response.status_code == 201, response.content
    dated, plain = response.json()["lessons"]
    assert (dated["expires_on"], dated["expires_when"]) == ("2026-09-01", "the 2.3 rollout reaches 100 %")
    assert (plain["expires_on"], plain["expires_when"]) == (None, "")
    lesson = Lesson.objects.get(pk=dated["id"])
    assert (str(lesson.expires_on), lesson.expires_when) == ("2026-09-01", "the 2.3 rollout reaches 100 %")
    # In the lesson's history, as written by the agent.
    change = Change.objects.get(lesson=lesson)
    assert change.after["expires_on"] == "2026-09-01" and change.batch.kind == "agent"


def test_a_duplicate_with_an_expiry_confirms_and_leaves_the_lesson_as_it_is(agent, persona, project, memory):
    existing = make_lesson(memory, "Use the staging mirror")
    response = post(
        agent, persona, project, {"tool": "log_learning", "text": "Use the staging mirror", "expires_on": "2026-09-01"}
    )
    assert response.status_code == 201
    answer = response.json()["lessons"][0]
    assert (answer["id"], answer["status"], answer["expires_on"]) == (existing.pk, "confirmed", None)
    existing.refresh_from_db()
    assert existing.expires_on is None
