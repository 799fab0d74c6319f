"""Agents see what the check found: ref status in the API and stale marks in the compiled context."""

from memory.models import LessonRef
from memory.refs.services import refs_check_project
from memory.tokens import agent_token_create
from tests.api.conftest import AgentClient, memory_url
from tests.factories import make_lesson


def _agent(client, memory):
    _, raw = agent_token_create(persona=memory.persona, project=None, name="tests")
    return AgentClient(client, raw)


def test_lessons_and_recall_carry_ref_status_and_a_permalink_at_the_verified_commit(
    client, checked_memory, repo, django_capture_on_commit_callbacks, django_assert_num_queries
):
    with django_capture_on_commit_callbacks(execute=True):
        moved = make_lesson(checked_memory, "Session is read in middleware.py", refs="src/auth/middleware.py#L10-L12")
        stale = make_lesson(checked_memory, "Invoices round in invoice.py", refs="src/billing/invoice.py#L4")
    verified = repo.head()
    repo.insert_lines("src/auth/middleware.py", 1, ["# new first line"])
    repo.replace_line("src/billing/invoice.py", 4, "rounding = 'bankers'")
    repo.commit("drift")
    refs_check_project(project=checked_memory.project)
    agent = _agent(client, checked_memory)
    url = memory_url(checked_memory.persona, checked_memory.project, "lessons")
    agent.get(url)

    # count, lessons, refs with their anchors (one join); the token scope and memory version are cached
    with django_assert_num_queries(3):
        page = agent.get(url).json()
    refs = {item["id"]: item["refs"][0] for item in page["items"]}
    assert refs[moved.pk]["status"] == "moved"
    assert refs[moved.pk]["proposed"] == "src/auth/middleware.py#L11-L13"
    assert refs[moved.pk]["verified_commit"] == verified
    assert refs[stale.pk]["status"] == "changed"

    recalled = agent.get(f"/api/v1/lessons/{stale.pk}").json()["refs"][0]
    assert recalled["permalink"] == f"https://github.com/example/app/blob/{verified}/src/billing/invoice.py#L4"

    context = agent.get(memory_url(checked_memory.persona, checked_memory.project, "context")).content.decode()
    assert "Invoices round in invoice.py (ref: src/billing/invoice.py#L4, stale)" in context
    assert "(ref: src/auth/middleware.py#L10-L12, stale)" in context
    data = agent.get(memory_url(checked_memory.persona, checked_memory.project, "context"), {"format": "json"}).json()
    by_id = {lesson["id"]: lesson for lesson in data["lessons"]}
    assert by_id[stale.pk]["refs"] == by_id[stale.pk]["stale_refs"] == ["src/billing/invoice.py#L4"]
    assert (
        f"[{stale.pk}] [OBSERVATION] Invoices round in invoice.py (ref: src/billing/invoice.py#L4, stale)"
        in data["text_with_ids"]
    )
    assert LessonRef.objects.get(lesson=moved).as_text() == "src/auth/middleware.py#L10-L12"  # left to a person


def test_a_ref_an_agent_writes_is_anchored_when_the_checkout_is_there(
    client, checked_memory, repo, django_capture_on_commit_callbacks
):
    agent = _agent(client, checked_memory)
    with django_capture_on_commit_callbacks(execute=True):
        response = agent.post(
            memory_url(checked_memory.persona, checked_memory.project, "lessons"),
            {
                "lessons": [
                    {
                        "tool": "log_learning",
                        "text": "Auth step 5 validates the token",
                        "refs": ["src/auth/middleware.py#L5"],
                    }
                ]
            },
        )
    assert response.status_code == 201, response.content
    lesson_id = response.json()["lessons"][0]["id"]
    ref = agent.get(f"/api/v1/lessons/{lesson_id}").json()["refs"][0]
    assert ref["status"] == "valid" and ref["verified_commit"] == repo.head()
