"""The LLM call log page (memory/engines/views.py)."""

import pytest
from django.urls import reverse

from memory.engines.recorder import CallRecorder
from tests.factories import MemoryFactory

URL = reverse("llm:calls")


def log_calls(
    memory, n, *, purpose="reflection", provider="anthropic", outcome="ok", tokens=(10, 2), latency=100, error=""
):
    recorder = CallRecorder(memory=memory)
    for _ in range(n):
        recorder.record(
            purpose=purpose,
            provider=provider,
            model="claude-test",
            tokens_in=tokens[0],
            tokens_out=tokens[1],
            latency_ms=latency,
            outcome=outcome,
            error=error,
        )
    return recorder.calls


@pytest.mark.parametrize(("role", "status"), [(None, 403), ("viewer", 200), ("curator", 200), ("approver", 200)])
def test_permission_matrix(client_for, django_user_model, role, status, request):
    user = request.getfixturevalue(role) if role else django_user_model.objects.create_user("nobody", password="x")
    assert client_for(user).get(URL).status_code == status


def test_anonymous_goes_to_login(client):
    response = client.get(URL)
    assert response.status_code == 302 and response.url.startswith(reverse("login"))


def test_totals_per_persona(client_for, viewer, memory):
    other = MemoryFactory()
    log_calls(memory, 3, tokens=(100, 20), latency=200)
    log_calls(memory, 1, outcome="error", tokens=(0, 0), latency=600, error="HTTP 500: boom")
    log_calls(other, 2, purpose="refinement", provider="openai", tokens=(7, 1), latency=50)

    response = client_for(viewer).get(URL)

    totals = {row["persona__name"]: row for row in response.context["totals"]}
    mine = totals[memory.persona.name]
    assert (mine["calls"], mine["tokens_in"], mine["tokens_out"], mine["errors"]) == (4, 300, 60, 1)
    assert mine["mean_latency_ms"] == pytest.approx(300)
    theirs = totals[other.persona.name]
    assert (theirs["calls"], theirs["tokens_in"], theirs["tokens_out"], theirs["errors"]) == (2, 14, 2, 0)
    assert response.context["grand_total"]["calls"] == 6
    body = response.content.decode()
    assert memory.persona.name in body and "HTTP 500: boom" in body and "300 ms" in body


@pytest.mark.parametrize(
    ("query", "expected_calls"),
    [
        ({"purpose": "refinement"}, 2),
        ({"outcome": "error"}, 1),
        ({"persona": "mine"}, 4),
        ({"persona": "mine", "outcome": "ok"}, 3),
    ],
)
def test_filters(client_for, viewer, memory, query, expected_calls):
    log_calls(memory, 3)
    log_calls(memory, 1, outcome="error", error="timeout")
    log_calls(MemoryFactory(), 2, purpose="refinement")
    if query.get("persona") == "mine":
        query = {**query, "persona": memory.persona_id}

    response = client_for(viewer).get(URL, query)

    assert response.context["page"].paginator.count == expected_calls
    assert response.context["grand_total"]["calls"] == expected_calls


def test_bad_filter_is_reported_and_not_applied(client_for, viewer, memory):
    log_calls(memory, 2)
    response = client_for(viewer).get(URL, {"persona": "999999", "outcome": "maybe"})
    assert response.status_code == 200
    assert "The filters were not applied" in response.content.decode()
    assert response.context["page"].paginator.count == 2


def test_pagination_keeps_filters(client_for, viewer, memory):
    log_calls(memory, 55, purpose="compaction")
    log_calls(memory, 5, purpose="reflection")

    first = client_for(viewer).get(URL, {"purpose": "compaction"})
    second = client_for(viewer).get(URL, {"purpose": "compaction", "page": 2})

    assert len(first.context["page"].object_list) == 50
    assert "?purpose=compaction&amp;page=2" in first.content.decode()
    assert len(second.context["page"].object_list) == 5


def test_htmx_gets_the_results_partial(client_for, viewer, memory):
    log_calls(memory, 1)
    body = client_for(viewer).get(URL, HTTP_HX_REQUEST="true").content.decode()
    assert "<html" not in body and "Totals per persona" in body


def test_error_text_is_escaped(client_for, viewer, memory):
    log_calls(memory, 1, outcome="error", error="<script>alert(1)</script>")
    body = client_for(viewer).get(URL).content.decode()
    assert "<script>alert(1)</script>" not in body
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in body


@pytest.mark.parametrize("n", [3, 30])
def test_query_count_does_not_grow(client_for, viewer, django_assert_num_queries, n):
    memories = [MemoryFactory() for _ in range(3)]
    for i in range(n):
        log_calls(memories[i % 3], 1, outcome="error" if i % 5 == 0 else "ok", error="x" if i % 5 == 0 else "")
    client = client_for(viewer)
    # session, user, user permissions, group permissions, purposes (filter choices), totals per persona
    # (whose sum is the grand total and the paginator's count), their names, the page of calls (with
    # persona, memory and project joined), personas and projects (filter choices), the review totals
    # (nav badges)
    with django_assert_num_queries(11):
        response = client.get(URL)
    assert response.status_code == 200
    assert len(response.context["page"].object_list) == n


def test_page_size_bounds_the_rows_read_and_shown(client_for, viewer, monkeypatch, django_assert_num_queries):
    from memory.engines import views

    monkeypatch.setattr(views, "PAGE_SIZE", 4)
    memory = MemoryFactory()
    log_calls(memory, 9)
    client = client_for(viewer)
    with django_assert_num_queries(11):
        response = client.get(URL)
    assert len(response.context["page"].object_list) == 4 and response.context["page"].paginator.num_pages == 3
    last = client.get(URL, {"page": 3})
    assert len(last.context["page"].object_list) == 1


def test_project_and_age_filters(client_for, viewer):
    first, second = MemoryFactory(), MemoryFactory()
    log_calls(first, 2)
    log_calls(second, 3)
    client = client_for(viewer)
    assert client.get(URL, {"project": second.project_id}).context["page"].paginator.count == 3
    assert client.get(URL, {"age": "day"}).context["page"].paginator.count == 5
    assert client.get(URL, {"age": "older"}).context["page"].paginator.count == 0


def test_totals_show_the_busiest_personas_and_the_rest_in_one_row(client_for, viewer):
    from memory.engines.views import TOTALS_SHOWN

    memories = [MemoryFactory() for _ in range(TOTALS_SHOWN + 2)]
    for k, memory in enumerate(memories):  # the first persona busiest
        log_calls(memory, len(memories) - k, tokens=(100, 10), latency=200 + k)
    log_calls(memories[-1], 1, outcome="error", error="timeout", tokens=(7, 0), latency=50)
    response = client_for(viewer).get(URL)
    totals, rest, grand = (response.context[k] for k in ("totals", "rest_total", "grand_total"))
    assert [row["persona__name"] for row in totals] == [m.persona.name for m in memories[:TOTALS_SHOWN]]
    assert rest["personas"] == 2 and rest["calls"] == 2 + 1 + 1 and rest["errors"] == 1
    assert rest["tokens_in"] == 100 * 3 + 7
    all_calls = sum(range(1, len(memories) + 1)) + 1
    assert grand["calls"] == all_calls == response.context["page"].paginator.count
    assert grand["tokens_in"] == 100 * (all_calls - 1) + 7 and grand["errors"] == 1
    latencies = [200 + k for k, m in enumerate(memories) for _ in range(len(memories) - k)] + [50]
    assert grand["mean_latency_ms"] == pytest.approx(sum(latencies) / len(latencies))
    html = response.content.decode()
    assert "2 more personas" in html and f"busiest {TOTALS_SHOWN} of {TOTALS_SHOWN + 2}" in html
    assert memories[-1].persona.name not in html.split('aria-label="Totals per persona"')[1].split("</table>")[0]


def test_persona_and_project_options_keep_the_choice(client_for, viewer):
    first, second = MemoryFactory(), MemoryFactory()
    log_calls(first, 1)
    log_calls(second, 2)
    response = client_for(viewer).get(URL, {"persona": second.persona_id})
    html = response.content.decode()
    assert f'<option value="{second.persona_id}" selected>' in html
    assert f'<option value="{first.persona_id}">' in html and f'<option value="{first.project_id}">' in html
    assert response.context["page"].paginator.count == 2
