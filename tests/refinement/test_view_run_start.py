import pytest
from django.urls import reverse
from django.utils import timezone

from memory.models import RefinementRun

from .helpers import core, state

pytestmark = pytest.mark.django_db


def url(memory):
    return reverse("refinement:run-start", args=[memory.pk])


def test_viewer_and_curator_cannot_start(client_for, viewer, curator, memory):
    for user in (viewer, curator):
        assert client_for(user).post(url(memory)).status_code == 403
    assert not RefinementRun.objects.exists()


def test_get_is_not_allowed(client_for, approver, memory):
    assert client_for(approver).get(url(memory)).status_code == 405


def test_approver_runs_now_offline_and_lands_on_the_run(
    client_for, approver, memory, django_capture_on_commit_callbacks
):
    lessons = [core(memory, f"Lesson {i}: cron job {i} writes to bucket {i}") for i in range(20)]
    dup = core(memory, lessons[0].text)
    with django_capture_on_commit_callbacks(execute=True):
        response = client_for(approver).post(url(memory))
    run = RefinementRun.objects.get()
    assert response.status_code == 302 and response.url == reverse("refinement:run", args=[run.pk])
    assert run.status == "completed" and run.engine == "offline" and run.requested_by == approver
    dup.refresh_from_db()
    assert dup.status == "superseded"


def test_htmx_run_now_redirects_client(client_for, approver, memory, django_capture_on_commit_callbacks):
    core(memory, "one")
    with django_capture_on_commit_callbacks(execute=True):
        response = client_for(approver).post(url(memory), HTTP_HX_REQUEST="true")
    assert response.headers["HX-Redirect"].startswith("/refinement/runs/")


def test_busy_memory_is_refused(client_for, approver, memory):
    core(memory, "one")
    RefinementRun.objects.create(memory=memory)
    before = state(memory)
    response = client_for(approver).post(url(memory), follow=True)
    assert b"already in progress" in response.content
    assert RefinementRun.objects.count() == 1 and state(memory) == before


def test_archived_persona_is_refused(client_for, approver, memory):
    memory.persona.archived_at = timezone.now()
    memory.persona.save()
    response = client_for(approver).post(url(memory), follow=True)
    assert b"archived or inactive" in response.content
    assert not RefinementRun.objects.exists()
