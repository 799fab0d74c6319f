"""Deciding one conflict (POST /conflicts/<pk>/decide/): each decision with and without htmx, edit
then keep, the link to revert the decision's batch, bad input, and who may decide."""

import pytest
from django.urls import reverse

from memory.models import ChangeBatch, Lesson, LessonConflict, LessonStatus
from tests.conflicts.conftest import HTMX, make_conflict

pytestmark = pytest.mark.django_db


def _url(conflict):
    return reverse("conflicts:decide", args=[conflict.pk])


def _statuses(conflict):
    return (
        Lesson.objects.get(pk=conflict.older_id).status,
        Lesson.objects.get(pk=conflict.newer_id).status,
        LessonConflict.objects.get(pk=conflict.pk).status,
    )


@pytest.mark.parametrize(
    ("decision", "older", "newer", "status", "said"),
    [
        ("keep_newer", LessonStatus.SUPERSEDED, LessonStatus.ACTIVE, "resolved", "Kept the newer lesson"),
        ("keep_older", LessonStatus.ACTIVE, LessonStatus.DELETED, "resolved", "Kept the older lesson"),
        ("keep_both", LessonStatus.ACTIVE, LessonStatus.ACTIVE, "dismissed", "Kept both"),
    ],
)
def test_each_decision_from_a_plain_form(memory, conflict, approver, client_for, decision, older, newer, status, said):
    client = client_for(approver)
    response = client.post(_url(conflict), {"decision": decision, "reason": "checked with the team"})
    assert response.status_code == 302 and response["Location"] == reverse("conflicts:inbox")
    assert _statuses(conflict) == (older, newer, status)
    html = client.get(response["Location"]).content.decode()
    assert said in html
    decided = LessonConflict.objects.get(pk=conflict.pk)
    if decision == "keep_both":
        assert decided.batch is None and "revert-link" not in html
    else:
        assert decided.batch.reason == "checked with the team"
        assert f'<a class="revert-link" href="{memory.history_url()}#batch-{decided.batch_id}">' in html


def test_from_the_conflicts_page_it_returns_there(conflict, approver, client_for):
    response = client_for(approver).post(_url(conflict), {"decision": "keep_newer", "next": "detail"})
    assert response["Location"] == reverse("conflicts:detail", args=[conflict.pk])


def test_htmx_gets_the_card_in_its_new_state_with_the_revert_link(memory, conflict, approver, client_for):
    response = client_for(approver).post(_url(conflict), {"decision": "keep_older"}, headers=HTMX)
    html = response.content.decode()
    assert response.status_code == 200 and html.lstrip().startswith('<article class="card conflict triage-card')
    batch = LessonConflict.objects.get(pk=conflict.pk).batch_id
    assert "Kept the older lesson; the newer one is deleted (restorable)." in html
    assert f'href="{memory.history_url()}#batch-{batch}"' in html and "Deleted</span>" in html
    assert "Keep the newer</button>" not in html


def test_edit_the_newer_then_keep_it(memory, conflict, approver, client_for):
    data = {
        "decision": "keep_newer",
        "edit": "1",
        "text": "  Queue 0 workers run with dramatiq since the March move.  ",
        "category": "DECISION",
        "refs": "src/queue/worker.py#L1-L3, docs/queue.md",
    }
    response = client_for(approver).post(_url(conflict), data, headers=HTMX)
    html = response.content.decode()
    assert "Edited the newer lesson and kept it; the older one is superseded by it." in html
    newer = Lesson.objects.get(pk=conflict.newer_id)
    assert newer.text == "Queue 0 workers run with dramatiq since the March move." and newer.category == "DECISION"
    assert [r.as_text() for r in newer.refs.all()] == ["src/queue/worker.py#L1-L3", "docs/queue.md"]
    assert _statuses(conflict) == (LessonStatus.SUPERSEDED, LessonStatus.ACTIVE, "resolved")
    assert "Conflict: edited the newer lesson, then kept it" in html


def test_edit_the_older_then_keep_it_without_htmx(conflict, approver, client_for):
    data = {"decision": "keep_older", "edit": "1", "text": "Queue 0 workers stay on celery.", "category": "PATTERN"}
    response = client_for(approver).post(_url(conflict), data, follow=True)
    assert "Edited the older lesson and kept it" in response.content.decode()
    assert Lesson.objects.get(pk=conflict.older_id).text == "Queue 0 workers stay on celery."
    assert _statuses(conflict) == (LessonStatus.ACTIVE, LessonStatus.DELETED, "resolved")


@pytest.mark.parametrize("htmx", [True, False])
@pytest.mark.parametrize(
    ("fields", "said"),
    [
        ({"text": ""}, "lesson text must not be empty"),
        ({"text": "Queue 0 runs \x1b[31m dramatiq"}, "lesson text"),
        ({"text": "Queue 0 runs dramatiq.", "category": "SHOPPING"}, "category for working lessons must be one of"),
        ({"text": "Queue 0 runs dramatiq.", "refs": "src/a.py#L9-L2"}, "src/a.py#L9-L2"),
    ],
)
def test_a_bad_edit_is_refused_with_the_reviewers_words_kept(conflict, approver, client_for, htmx, fields, said):
    before = (_statuses(conflict), Lesson.objects.get(pk=conflict.newer_id).text, ChangeBatch.objects.count())
    data = {"decision": "keep_newer", "edit": "1", "category": "OBSERVATION", **fields}
    response = client_for(approver).post(_url(conflict), data, headers=HTMX if htmx else {})
    html = response.content.decode()
    assert response.status_code == (200 if htmx else 400)
    assert "Not decided: " in html and said in html
    assert (_statuses(conflict), Lesson.objects.get(pk=conflict.newer_id).text, ChangeBatch.objects.count()) == before
    # The form comes back open, holding what was typed.
    assert '<details class="edit-keep" open data-key="e">' in html
    assert f">{fields['text']}</textarea>" in html


def test_an_unknown_decision_changes_nothing(conflict, approver, client_for):
    client = client_for(approver)
    for decision in ("", "keep_all", "edit"):
        response = client.post(_url(conflict), {"decision": decision}, follow=True)
        assert "Choose keep the newer, keep the older or keep both." in response.content.decode()
    html = client.post(_url(conflict), {"decision": "nope"}, headers=HTMX).content.decode()
    assert "Choose keep the newer" in html and 'class="alert alert-error"' in html
    assert _statuses(conflict) == (LessonStatus.ACTIVE, LessonStatus.ACTIVE, "pending")


def test_a_decided_conflict_is_not_decided_again(conflict, approver, client_for):
    client = client_for(approver)
    client.post(_url(conflict), {"decision": "keep_both"})
    response = client.post(_url(conflict), {"decision": "keep_newer"}, follow=True)
    assert "Not decided: this conflict is already dismissed (both hold)" in response.content.decode()
    assert _statuses(conflict) == (LessonStatus.ACTIVE, LessonStatus.ACTIVE, "dismissed")


@pytest.mark.parametrize("role", ["viewer", "curator"])
def test_only_approvers_decide(conflict, client_for, request, role):
    person = request.getfixturevalue(role)
    response = client_for(person).post(_url(conflict), {"decision": "keep_newer"})
    assert response.status_code == 403
    assert _statuses(conflict) == (LessonStatus.ACTIVE, LessonStatus.ACTIVE, "pending")


def test_a_viewer_in_the_conflicts_team_may_not_decide_and_another_teams_conflict_is_not_found(
    team_memory, team_member, client_for
):
    red, blue = team_memory("red"), team_memory("blue")
    mine, theirs = make_conflict(red, 1), make_conflict(blue, 2)
    lead = team_member("lead", {red.project.team: "approver", blue.project.team: "viewer"})
    stranger = team_member("stranger", {red.project.team: "approver"})
    assert client_for(lead).post(_url(theirs), {"decision": "keep_newer"}).status_code == 403
    assert client_for(stranger).post(_url(theirs), {"decision": "keep_newer"}).status_code == 404
    assert _statuses(theirs) == (LessonStatus.ACTIVE, LessonStatus.ACTIVE, "pending")
    assert client_for(stranger).post(_url(mine), {"decision": "keep_newer"}).status_code == 302


def test_get_is_not_allowed(conflict, approver, client_for):
    assert client_for(approver).get(_url(conflict)).status_code == 405


def test_reverting_the_batch_from_history_makes_the_conflict_pending_again(memory, conflict, approver, client_for):
    client = client_for(approver)
    client.post(_url(conflict), {"decision": "keep_newer", "edit": "1", "text": "Queue 0 runs dramatiq now."})
    batch = LessonConflict.objects.get(pk=conflict.pk).batch
    response = client.post(reverse("batch_revert", args=[batch.pk]), {"next": memory.history_url()})
    assert response.status_code == 302
    assert _statuses(conflict) == (LessonStatus.ACTIVE, LessonStatus.ACTIVE, "pending")
    assert Lesson.objects.get(pk=conflict.newer_id).text == "Queue 0 workers run with dramatiq."
    assert f"Conflict #{conflict.pk}" in client.get(reverse("conflicts:inbox")).content.decode()


def test_htmx_on_the_list_updates_its_count_and_on_the_conflicts_page_not(memory, approver, client_for):
    first, second = make_conflict(memory, 1), make_conflict(memory, 2)
    client = client_for(approver)
    html = client.post(_url(first), {"decision": "keep_newer"}, headers=HTMX).content.decode()
    assert '<span id="conflicts-count" hx-swap-oob="true">1 conflict</span>' in html
    html = client.post(_url(second), {"decision": "keep_both", "next": "detail"}, headers=HTMX).content.decode()
    assert "conflicts-count" not in html
