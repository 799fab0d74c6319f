"""The pipeline pages: who may see and start runs, the progress partial, constant query counts."""

import pytest
from django.urls import reverse

from memory.models import Interaction, PipelineRun
from tests.factories import make_lesson
from tests.pipeline.helpers import make_interaction


def test_anonymous_is_sent_to_login(client, memory):
    assert client.get(reverse("pipeline:runs")).status_code == 302


def test_viewer_sees_runs_but_cannot_start(client_for, viewer, memory):
    client = client_for(viewer)
    page = client.get(reverse("pipeline:runs") + f"?memory={memory.pk}")
    assert page.status_code == 200 and b"Run pipeline" not in page.content
    assert client.post(reverse("pipeline:run-start", args=[memory.pk])).status_code == 403
    assert not PipelineRun.objects.exists()


def test_approver_starts_a_run_from_an_interaction(client_for, approver, memory, django_capture_on_commit_callbacks):
    interaction = make_interaction(memory)
    with django_capture_on_commit_callbacks(execute=True):
        response = client_for(approver).post(
            reverse("pipeline:run-start", args=[memory.pk]), {"interaction": interaction.pk}
        )
    run = PipelineRun.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse("pipeline:run", args=[run.pk])
    run.refresh_from_db()  # eager task: the run already finished
    assert run.status == "completed" and run.observations_added == 3


def test_approver_starts_a_run_from_a_pasted_transcript(
    client_for, approver, memory, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        client_for(approver).post(
            reverse("pipeline:run-start", args=[memory.pk]),
            {
                "transcript": "[a1] user @ 2026-03-02 10:00: We decided to keep retries at three attempts.\n"
                "assistant: Changed the retry count in src/http/client.py to three attempts."
            },
        )
    interaction = Interaction.objects.get(memory=memory)
    assert [e["id"] for e in interaction.transcript] == ["a1", "e2"]
    run = PipelineRun.objects.get()
    assert run.interaction == interaction and run.observations_added == 2


def test_an_interaction_of_another_memory_is_refused(client_for, approver, memory):
    from tests.factories import MemoryFactory

    other = make_interaction(MemoryFactory())
    response = client_for(approver).post(
        reverse("pipeline:run-start", args=[memory.pk]), {"interaction": other.pk}, follow=True
    )
    assert b"does not belong to this memory" in response.content
    assert not PipelineRun.objects.exists()


def test_progress_polls_while_running_and_stops_when_done(client_for, viewer, memory):
    make_lesson(memory, "Deploys go out on Fridays.", relevance="high")
    run = PipelineRun.objects.create(
        memory=memory,
        phase="reflector",
        completed_phases=["observer"],
        pass_no=1,
        max_passes=2,
        tool_calls=3,
        reflections_added=2,
        starting_reflections=1,
    )
    client = client_for(viewer)
    page = client.get(reverse("pipeline:run", args=[run.pk]))
    html = page.content.decode()
    assert 'hx-trigger="every 1s"' in html and "pass 1 of 2" in html and "3 reflections (2 new)" in html
    assert 'data-phase="observer" data-state="done"' in html and 'data-phase="reflector" data-state="current"' in html
    partial = client.get(reverse("pipeline:run", args=[run.pk]), HTTP_HX_REQUEST="true")
    assert partial.status_code == 200 and b"<html" not in partial.content
    PipelineRun.objects.filter(pk=run.pk).update(
        status="completed", completed_phases=["observer", "reflector", "pruner"]
    )
    done = client.get(reverse("pipeline:run", args=[run.pk]), HTTP_HX_REQUEST="true")
    assert done.status_code == 286 and b"hx-trigger" not in done.content
    assert b'data-phase="pruner" data-state="done"' in done.content


def test_run_text_is_escaped(client_for, viewer, memory):
    run = PipelineRun.objects.create(memory=memory, status="failed", error="<script>alert(1)</script>")
    page = client_for(viewer).get(reverse("pipeline:run", args=[run.pk]))
    assert b"<script>alert(1)" not in page.content and b"&lt;script&gt;" in page.content


@pytest.mark.parametrize("view", ["runs", "run"])
def test_query_count_does_not_grow_with_data(client_for, viewer, memory, django_assert_num_queries, view):
    client = client_for(viewer)

    def url():
        run = PipelineRun.objects.order_by("-id").first()
        return reverse("pipeline:runs") if view == "runs" else reverse("pipeline:run", args=[run.pk])

    PipelineRun.objects.create(memory=memory)
    make_lesson(memory, "one", relevance="low")
    client.get(url())
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as few:
        client.get(url())
    for n in range(5):
        PipelineRun.objects.create(memory=memory)
        make_lesson(memory, f"more {n}", relevance="high")
    with django_assert_num_queries(len(few.captured_queries)):
        assert client.get(url()).status_code == 200


def test_page_size_bounds_the_runs_and_the_memory_picker(
    client_for, approver, memory, monkeypatch, django_assert_num_queries
):
    from memory.pipeline import views
    from tests.factories import MemoryFactory

    monkeypatch.setattr(views, "RUNS_PER_PAGE", 3)
    monkeypatch.setattr(views, "MEMORY_CHOICES", 2)
    others = [MemoryFactory() for _ in range(3)]
    for _ in range(4):
        PipelineRun.objects.create(memory=memory)
    PipelineRun.objects.create(memory=others[0])
    client = client_for(approver)
    # session, user, group perms, user perms; memory choices; runs count and page; teams, personas and projects
    # (filter bar); the review queue badge
    with django_assert_num_queries(11):
        body = client.get(reverse("pipeline:runs")).content.decode()
    assert body.count('href="/pipeline/runs/') == 3 and "Page 1 of 2 · 5 items" in body
    assert body.count('<option value="') - body.count('name="persona"') >= 2
    assert "choose a persona or project below to narrow the list" in body
    narrowed = client.get(reverse("pipeline:runs"), {"persona": others[0].persona_id}).content.decode()
    assert narrowed.count('href="/pipeline/runs/') == 1 and "narrow the list" not in narrowed
    chosen = client.get(reverse("pipeline:runs"), {"memory": others[2].pk}).content.decode()
    assert f'<option value="{others[2].pk}" selected>' in chosen
