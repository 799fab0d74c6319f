import pytest
from django.urls import reverse

from memory.engines.base import ToolCall
from memory.models import RefinementRun
from memory.refinement.services import refinement_run_create
from memory.refinement.session import RefinementSession

from .helpers import core, run_with
from .scripted import ScriptedEngine

pytestmark = pytest.mark.django_db


def url(run):
    return reverse("refinement:run", args=[run.pk])


def running_run(memory):
    lessons = [core(memory, f"Lesson {i} about the <b>billing</b> export job {i}") for i in range(30)]
    run = refinement_run_create(memory=memory)
    session = RefinementSession.load(run)
    session.handle(ToolCall("1", "update", {"id": lessons[0].pk, "text": "Lesson 0 about billing export job 0"}))
    session.handle(ToolCall("2", "delete", {"id": lessons[1].pk}))
    run.refresh_from_db()
    return run


def test_permissions(client, client_for, memory, django_user_model):
    run = running_run(memory)
    assert client.get(url(run)).status_code == 302
    client.force_login(django_user_model.objects.create_user("nobody", password="x"))
    assert client.get(url(run)).status_code == 403


def test_running_run_polls_with_progress(client_for, viewer, memory):
    run = running_run(memory)
    c = client_for(viewer)
    page = c.get(url(run)).content.decode()
    assert 'hx-trigger="every 1s"' in page
    assert 'data-testid="ops-used">2 / 10' in page
    assert "#2 delete" in page
    partial = c.get(url(run), HTTP_HX_REQUEST="true")
    assert partial.status_code == 200
    body = partial.content.decode()
    assert body.lstrip().startswith('<div id="run-body"') and "every 1s" in body
    assert "<b>billing</b>" not in body


def test_finished_run_stops_polling_and_shows_diffs(client_for, viewer, memory):
    lessons = [core(memory, f"Lesson {i} about the <b>billing</b> export job {i}") for i in range(30)]
    run = run_with(
        memory,
        ScriptedEngine(
            [
                ("update", {"id": lessons[0].pk, "text": "Lesson 0 about the billing export"}),
                ("delete", {"id": lessons[2].pk}),
                ("delete", {"id": lessons[3].pk}),
                ("complete", {}),
            ]
        ),
    )
    assert run.status == "completed"
    c = client_for(viewer)
    polled = c.get(url(run), HTTP_HX_REQUEST="true")
    assert polled.status_code == 286
    body = polled.content.decode()
    assert "every 1s" not in body
    assert "<del>&lt;b&gt;billing&lt;/b&gt;</del>" in body and "<ins>billing</ins>" in body
    page = c.get(url(run)).content.decode()
    assert "Exact prompt sent" in page and "Revert this run" not in page  # viewer cannot revert
    assert "&lt;b&gt;billing&lt;/b&gt;" in page and "<b>billing</b>" not in page


def test_query_count_does_not_grow_with_operations(client_for, viewer, memory, django_assert_num_queries):
    lessons = [core(memory, f"Lesson {i} about the export job {i}") for i in range(60)]
    small = run_with(memory, ScriptedEngine([("delete", {"id": lessons[0].pk}), ("complete", {})]))
    big = run_with(
        memory,
        ScriptedEngine(
            [("delete", {"id": lesson.pk}) for lesson in lessons[1:6]]
            + [("search", {"query": "export"})] * 10
            + [("complete", {})]
        ),
    )
    c = client_for(viewer)
    c.get(url(small))
    # the same queries plus the review queue of the nav badges and the run's timeline
    with django_assert_num_queries(9):
        c.get(url(small))
    with django_assert_num_queries(9):
        c.get(url(big))


def test_missing_run_is_404(client_for, viewer):
    assert client_for(viewer).get("/refinement/runs/999999/").status_code == 404


def test_hidden_characters_show_as_markers_with_a_warning(client_for, viewer, memory):
    from tests.hidden import HIDDEN_TEXT, assert_hidden_characters_shown

    lessons = [core(memory, f"Lesson {i} about the billing export job {i} in src/export.py") for i in range(20)]
    target = core(memory, HIDDEN_TEXT)
    run = run_with(
        memory,
        ScriptedEngine(
            [
                ("update", {"id": target.pk, "text": HIDDEN_TEXT.replace("admin", "root")}),
                ("update", {"id": lessons[0].pk, "text": "Lesson 0\u200b: billing export in src/export.py"}),
                ("complete", {}),
            ]
        ),
    )
    assert run.status == RefinementRun.Status.COMPLETED, run.error
    html = client_for(viewer).get(url(run)).content.decode()
    assert_hidden_characters_shown(html)
