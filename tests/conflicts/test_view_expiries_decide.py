"""Deciding one proposed expiry: accept as proposed or edited, reject; clear errors that change nothing;
approvers of the lesson's team only."""

from datetime import date

import pytest
from django.urls import reverse

from memory.models import Change, ExpiryProposal, Lesson
from personas.models import Membership
from tests.conflicts.expiry_helpers import propose

pytestmark = pytest.mark.django_db


def _url(proposal):
    return reverse("conflicts:expiry-decide", args=[proposal.pk])


@pytest.fixture
def proposal(memory):
    return propose(memory, "Use the <em>staging</em> mirror until 2026-12-24.")


def test_accept_as_proposed_without_htmx_goes_back_to_the_list(proposal, approver, client_for):
    response = client_for(approver).post(
        _url(proposal), {"decision": "accept", "expires_on": "2026-12-24", "expires_when": ""}, follow=True
    )
    assert response.redirect_chain[-1][0] == reverse("conflicts:expiries") + "?show=proposals"
    assert "Accepted: the lesson now carries this expiry" in response.content.decode()
    assert Lesson.objects.get(pk=proposal.lesson_id).expires_on == date(2026, 12, 24)
    assert ExpiryProposal.objects.get(pk=proposal.pk).status == "accepted"


def test_an_edited_accept_over_htmx_swaps_the_row(proposal, approver, client_for):
    response = client_for(approver).post(
        _url(proposal),
        {"decision": "accept", "expires_on": "2027-01-15", "expires_when": "the mirror is retired", "reason": "ops"},
        headers={"HX-Request": "true"},
    )
    body = response.content.decode()
    assert response.status_code == 200 and body.lstrip().startswith(
        f'<article class="card expiry" id="expiry-{proposal.pk}"'
    )
    assert "Accepted" in body and "&lt;em&gt;staging&lt;/em&gt;" in body and 'value="accept"' not in body
    lesson = Lesson.objects.get(pk=proposal.lesson_id)
    assert (lesson.expires_on, lesson.expires_when) == (date(2027, 1, 15), "the mirror is retired")


@pytest.mark.parametrize(
    "data, message",
    [
        ({"expires_on": "24.12.2026"}, "is not a date: use YYYY-MM-DD"),
        ({"expires_on": "2026-02-30"}, "is not a date: use YYYY-MM-DD"),
        ({"expires_on": "", "expires_when": "y" * 301}, "expires_when"),
        ({"expires_on": "", "expires_when": ""}, "needs a date or a condition"),
    ],
)
def test_bad_values_are_clear_errors_that_change_nothing(proposal, approver, client_for, data, message):
    changes = Change.objects.count()
    response = client_for(approver).post(_url(proposal), {"decision": "accept", **data}, headers={"HX-Request": "true"})
    body = response.content.decode()
    assert 'role="alert"' in body and "Not decided:" in body and message in body
    assert 'value="accept"' in body  # the form is there again, with what was typed
    if data.get("expires_on"):
        assert f'value="{data["expires_on"]}"' in body
    assert ExpiryProposal.objects.get(pk=proposal.pk).status == "pending"
    assert Change.objects.count() == changes and Lesson.objects.get(pk=proposal.lesson_id).expires_on is None


def test_reject(proposal, approver, client_for):
    response = client_for(approver).post(_url(proposal), {"decision": "reject"}, follow=True)
    assert "Rejected" in response.content.decode()
    assert ExpiryProposal.objects.get(pk=proposal.pk).status == "rejected"
    assert Lesson.objects.get(pk=proposal.lesson_id).expires_on is None


def test_an_unknown_decision_changes_nothing(proposal, approver, client_for):
    response = client_for(approver).post(_url(proposal), {"decision": "maybe"}, follow=True)
    assert "Not decided: Choose accept or reject." in response.content.decode()
    assert ExpiryProposal.objects.get(pk=proposal.pk).status == "pending"


def test_a_viewer_cannot_decide(proposal, viewer, client_for):
    assert client_for(viewer).post(_url(proposal), {"decision": "reject"}).status_code == 403
    assert ExpiryProposal.objects.get(pk=proposal.pk).status == "pending"


def test_another_teams_proposal_is_404(team_memory, django_user_model, client_for):
    mine, other = team_memory("mine"), team_memory("other")
    theirs = propose(other, "Keep the old API until 2026-12-24.")
    approver = django_user_model.objects.create_user("lead")
    Membership.objects.create(team=mine.project.team, user=approver, role="approver")
    assert client_for(approver).post(_url(theirs), {"decision": "reject"}).status_code == 404
    assert ExpiryProposal.objects.get(pk=theirs.pk).status == "pending"


def test_get_is_not_allowed(proposal, approver, client_for):
    assert client_for(approver).get(_url(proposal)).status_code == 405
