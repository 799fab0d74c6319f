"""One conflict's page: both lessons side by side with dates, tiers, refs and the evidence; the
decisions for approvers only; another team's conflict does not exist."""

from datetime import date

import pytest
from django.urls import reverse

from memory import services
from memory.conflicts.services import conflict_keep_newer, conflicts_detect
from memory.models import LessonConflict
from tests.conflicts.conftest import make_conflict
from tests.factories import make_lesson

pytestmark = pytest.mark.django_db


def _url(conflict):
    return reverse("conflicts:detail", args=[conflict.pk])


def test_both_lessons_side_by_side_with_dates_tiers_refs_and_evidence(memory, viewer, client_for):
    older = make_lesson(
        memory,
        "Build the <b>admin</b> bundle with webpack.",
        tier="core",
        category="DECISION",
        refs="web/webpack.config.js#L1-L20",
        day=date(2025, 11, 3),
    )
    make_lesson(memory, "Build the <b>admin</b> bundle with vite.", refs="web/vite.config.ts", day=date(2026, 2, 1))
    conflicts_detect(memory=memory)
    conflict = LessonConflict.objects.get()
    html = client_for(viewer).get(_url(conflict)).content.decode()
    assert "Older · <span" in html and "Newer · <span" in html
    assert 'datetime="2025-11-03"' in html and 'datetime="2026-02-01"' in html
    assert ">Core</span>" in html and ">Working</span>" in html
    assert "web/webpack.config.js#L1-L20" in html and "web/vite.config.ts" in html
    assert "What differs:" in html and conflict.evidence.split()[0] in html
    assert "&lt;b&gt;admin&lt;/b&gt;" in html and "<b>admin" not in html
    assert f'data-lesson="{older.pk}"' in html
    assert "Only approvers can decide conflicts." in html and "Keep the newer" not in html


def test_an_approver_gets_the_decisions_and_both_edit_forms(conflict, approver, client_for):
    html = client_for(approver).get(_url(conflict)).content.decode()
    assert "Keep the newer" in html and "Keep the older" in html and "Keep both" in html
    assert html.count('name="next" value="detail"') == 3  # the decisions and the two edit forms come back here
    assert 'name="text"' in html and "Save the newer and keep it" in html and "Save the older and keep it" in html
    assert 'class="triage-select"' not in html  # nothing to select on one conflict's page


def test_a_decided_conflict_shows_the_decision_and_where_to_revert_it(memory, conflict, approver, client_for):
    decided = conflict_keep_newer(conflict=conflict, actor=services.Actor.for_user(approver))
    html = client_for(approver).get(_url(conflict)).content.decode()
    assert "Kept the newer lesson by <strong>approver</strong>" in html
    assert f'href="{memory.history_url()}#batch-{decided.batch_id}"' in html
    assert "Superseded</span>" in html and "Keep the newer</button>" not in html


def test_another_teams_conflict_is_not_found(team_memory, team_member, client_for):
    red, blue = team_memory("red"), team_memory("blue")
    theirs = make_conflict(blue, 2)
    lead = team_member("lead", {red.project.team: "approver"})
    client = client_for(lead)
    assert client.get(_url(theirs)).status_code == 404
    assert client.get(reverse("conflicts:detail", args=[987654])).status_code == 404


def test_anonymous_is_sent_to_login(client, conflict):
    response = client.get(_url(conflict))
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]
