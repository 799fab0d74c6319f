"""Deciding several proposed expiries at once: each in its own batch, refusals listed."""

from datetime import date

import pytest
from django.urls import reverse

from memory.models import ExpiryProposal, Lesson
from tests.conflicts.expiry_helpers import propose

pytestmark = pytest.mark.django_db
URL = reverse("conflicts:expiries-bulk")


def test_bulk_accept_sets_each_expiry_in_its_own_batch(memory, approver, client_for):
    proposals = [propose(memory, f"Send report {i} to the old bucket until 2026-12-2{i}.") for i in range(3)]
    response = client_for(approver).post(
        URL, {"proposal": [p.pk for p in proposals], "decision": "accept"}, follow=True
    )
    assert "Decided 3 proposed expiries." in response.content.decode()
    decided = ExpiryProposal.objects.filter(pk__in=[p.pk for p in proposals])
    assert {p.status for p in decided} == {"accepted"} and len({p.batch_id for p in decided}) == 3
    assert sorted(Lesson.objects.filter(expires_on__isnull=False).values_list("expires_on", flat=True)) == [
        date(2026, 12, 20),
        date(2026, 12, 21),
        date(2026, 12, 22),
    ]


def test_bulk_lists_what_it_could_not_decide(memory, approver, client_for):
    first = propose(memory, "Pin the old driver until 2026-12-20.")
    second = propose(memory, "Pin the old client until 2026-12-21.")
    client = client_for(approver)
    client.post(reverse("conflicts:expiry-decide", args=[second.pk]), {"decision": "reject"})
    response = client.post(URL, {"proposal": [first.pk, second.pk], "decision": "reject"}, follow=True)
    body = response.content.decode()
    assert (
        "Decided 1 proposed expiry." in body
        and f"Proposed expiry {second.pk}: this proposed expiry is already rejected" in body
    )


@pytest.mark.parametrize(
    "data, message",
    [
        ({"decision": "accept"}, "Nothing decided: Select at least one proposed expiry."),
        ({"proposal": ["x"], "decision": "accept"}, "is not a proposed expiry number"),
        ({"proposal": ["99999"], "decision": "accept"}, "does not exist or is not yours to decide"),
        ({"proposal": ["PK"], "decision": "shrug"}, "Nothing decided: Choose accept or reject."),
    ],
)
def test_bulk_refusals_change_nothing(memory, approver, client_for, data, message):
    proposal = propose(memory, "Pin the old driver until 2026-12-20.")
    data = {
        k: [str(proposal.pk) if v == "PK" else v for v in vs] if isinstance(vs, list) else vs for k, vs in data.items()
    }
    response = client_for(approver).post(URL, data, follow=True)
    assert message in response.content.decode()
    assert ExpiryProposal.objects.get(pk=proposal.pk).status == "pending"


def test_a_viewer_cannot_bulk_decide(memory, viewer, client_for):
    proposal = propose(memory, "Pin the old driver until 2026-12-20.")
    assert client_for(viewer).post(URL, {"proposal": [proposal.pk], "decision": "reject"}).status_code == 403
    assert ExpiryProposal.objects.get(pk=proposal.pk).status == "pending"
