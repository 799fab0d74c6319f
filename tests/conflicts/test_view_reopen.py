"""Reopening a conflict whose lessons were both kept (POST /conflicts/<pk>/reopen/): "keep both"
changes no lesson, so it has no batch to revert; this is how it is undone."""

import pytest
from django.urls import reverse

from memory import services
from memory.conflicts import CONFLICT_MARK
from memory.conflicts.selectors import marked_lesson_ids
from memory.conflicts.services import conflict_keep_both, conflict_keep_newer
from memory.models import LessonConflict
from memory.selectors import compiled_memory_text
from tests.conflicts.conftest import HTMX, make_conflict

pytestmark = pytest.mark.django_db
LEAD = services.Actor.system("lead")


def _url(conflict):
    return reverse("conflicts:reopen", args=[conflict.pk])


def test_keep_both_then_reopen_marks_the_older_line_again(memory, conflict, approver, client_for):
    client = client_for(approver)
    html = client.post(reverse("conflicts:decide", args=[conflict.pk]), {"decision": "keep_both"}, headers=HTMX)
    html = html.content.decode()
    assert f'action="{_url(conflict)}"' in html and ">Reopen</button>" in html
    memory.refresh_from_db()
    assert CONFLICT_MARK not in compiled_memory_text(memory)
    html = client.post(_url(conflict), headers=HTMX).content.decode()
    assert "Reopened: this conflict waits for review again." in html and "Keep the newer" in html
    reopened = LessonConflict.objects.get(pk=conflict.pk)
    assert (reopened.status, reopened.decision, reopened.decided_by, reopened.decided_at) == ("pending", "", None, None)
    assert marked_lesson_ids(memory.pk) == {conflict.older_id}
    memory.refresh_from_db()  # the version the agents' context is compiled for
    assert CONFLICT_MARK in compiled_memory_text(memory)


def test_without_htmx_it_returns_to_the_page_it_came_from(conflict, approver, client_for):
    conflict_keep_both(conflict=conflict, actor=LEAD)
    client = client_for(approver)
    response = client.post(_url(conflict), {"next": "detail"})
    assert response["Location"] == reverse("conflicts:detail", args=[conflict.pk])
    assert "waits for review again" in client.get(response["Location"]).content.decode()


def test_a_pending_or_resolved_conflict_is_not_reopened(memory, approver, client_for):
    pending, resolved = make_conflict(memory, 1), make_conflict(memory, 2)
    conflict_keep_newer(conflict=resolved, actor=LEAD)
    client = client_for(approver)
    said = client.post(_url(pending), follow=True).content.decode()
    assert "Not reopened: only a conflict whose lessons were both kept is reopened here" in said
    said = client.post(_url(resolved), follow=True).content.decode()
    assert "revert its decision&#x27;s batch in the memory&#x27;s history instead" in said
    assert LessonConflict.objects.get(pk=resolved.pk).status == "resolved"


def test_only_approvers_of_its_team_reopen(team_memory, team_member, client_for, viewer):
    red, blue = team_memory("red"), team_memory("blue")
    theirs = make_conflict(blue, 2)
    conflict_keep_both(conflict=theirs, actor=LEAD)
    assert client_for(viewer).post(_url(theirs)).status_code == 403
    reader = team_member("reader", {blue.project.team: "viewer", red.project.team: "approver"})
    assert client_for(reader).post(_url(theirs)).status_code == 403
    stranger = team_member("stranger", {red.project.team: "approver"})
    assert client_for(stranger).post(_url(theirs)).status_code == 404
    assert client_for(stranger).get(_url(theirs)).status_code == 405
    assert LessonConflict.objects.get(pk=theirs.pk).status == "dismissed"
