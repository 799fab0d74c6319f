"""“Check now” on /conflicts/ queues a full detection pass for the memories the person governs; what
it finds joins the list once the job has run, and nothing runs inside the request."""

from datetime import date

import pytest
from django.urls import reverse

from memory.models import LessonConflict
from tests.factories import MemoryFactory, make_lesson

pytestmark = pytest.mark.django_db
URL = reverse("conflicts:detect")


def _disagreeing(memory):
    make_lesson(memory, "Upload retries are capped at 3 attempts.", day=date(2026, 1, 5))
    make_lesson(memory, "Upload retries are now capped at 5 attempts.", day=date(2026, 2, 14))


def test_an_approver_checks_now_and_the_conflict_joins_the_list(
    client_for, approver, memory, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=False):
        _disagreeing(memory)  # the after-batch pass is not run: only Check now finds the pair
    client = client_for(approver)
    page = client.get(reverse("conflicts:inbox")).content.decode()
    assert "Check now" in page and "No conflict is waiting for review." in page
    with django_capture_on_commit_callbacks(execute=False) as queued:
        response = client.post(URL, {"memory": memory.pk}, follow=True)
    assert "Conflict check queued for" in response.content.decode()
    assert not LessonConflict.objects.exists()  # nothing ran inside the request
    assert len(queued) == 1
    queued[0]()  # the worker takes the job
    page = client.get(reverse("conflicts:inbox")).content.decode()
    assert LessonConflict.objects.filter(memory=memory, status="pending").count() == 1
    assert "capped at 3 attempts" in page


def test_check_now_without_a_memory_covers_every_active_memory_the_person_governs(
    client_for, approver, memory, django_capture_on_commit_callbacks
):
    other = MemoryFactory(project=memory.project)
    archived = MemoryFactory(project=memory.project)
    archived.persona.is_active = False
    archived.persona.save()
    with django_capture_on_commit_callbacks(execute=False) as queued:
        client_for(approver).post(URL)
    assert len(queued) == 2 and other.persona.is_active


def test_a_viewer_may_not_check_and_another_teams_memory_is_not_found(
    client_for, viewer, team_memory, team_member, django_capture_on_commit_callbacks
):
    assert client_for(viewer).post(URL).status_code == 403
    mine, elsewhere = team_memory("red"), team_memory("blue")
    lead = team_member("lead", {mine.project.team: "approver"})
    with django_capture_on_commit_callbacks(execute=False) as queued:
        assert client_for(lead).post(URL, {"memory": elsewhere.pk}).status_code == 404
        assert client_for(lead).post(URL, {"memory": "not-a-number"}).status_code == 404
    assert queued == []


def test_a_get_is_refused(client_for, approver):
    assert client_for(approver).get(URL).status_code == 405
