"""POST /compactions/reject/: reject several proposals with one reason from the list."""

import pytest
from django.urls import reverse

from memory.compaction.services import compaction_bulk_reject, compaction_propose, compaction_reject
from memory.models import CompactionProposal, Lesson
from tests.compaction.test_view_list import big_memory

pytestmark = pytest.mark.django_db
URL = reverse("compaction-bulk-reject")


@pytest.fixture
def proposals(actor):
    return [compaction_propose(memory=big_memory(5), actor=actor) for _ in range(3)]


def test_approver_rejects_the_selected_proposals_and_working_memory_is_unchanged(client_for, approver, proposals):
    before = Lesson.objects.filter(tier="working", status="active").count()
    client = client_for(approver)
    listing = client.get(reverse("compaction-list")).content.decode()
    assert f'value="{proposals[0].pk}" form="compaction-bulk"' in listing and "Reject selected" in listing
    page = client.post(
        URL, {"proposal": [proposals[0].pk, proposals[2].pk], "reason": "The week's noise"}, follow=True
    ).content.decode()
    assert f"Rejected 2 of 2: #{proposals[0].pk}, #{proposals[2].pk}." in page
    assert dict(CompactionProposal.objects.values_list("pk", "status")) == {
        proposals[0].pk: "rejected",
        proposals[1].pk: "pending",
        proposals[2].pk: "rejected",
    }
    assert set(CompactionProposal.objects.filter(status="rejected").values_list("reason", flat=True)) == {
        "The week's noise"
    }
    assert Lesson.objects.filter(tier="working", status="active").count() == before


def test_one_already_decided_is_named_with_who_and_the_rest_go(actor, approver, proposals, django_user_model):
    from django.contrib.auth.models import Group

    from memory import services

    other = django_user_model.objects.create_user("dana", password="x")
    other.groups.add(Group.objects.get(name="approver"))
    compaction_reject(proposal=proposals[1], actor=services.Actor.for_user(other), reason="Dup")
    outcome = compaction_bulk_reject(proposal_ids=[p.pk for p in proposals] + [424242], actor=actor, reason="Noise")
    assert outcome["rejected"] == [proposals[0].pk, proposals[2].pk]
    assert outcome["refused"] == [
        {"id": proposals[1].pk, "message": "Already rejected by dana."},
        {"id": 424242, "message": "Proposal #424242 does not exist."},
    ]


@pytest.mark.parametrize(
    "data, message",
    [
        ({"reason": ""}, "Say why the proposals are rejected."),
        ({"reason": "x", "proposal": ["1", "nope"]}, "not a proposal number"),
        ({"reason": "x", "proposal": []}, "Select at least one proposal."),
    ],
)
def test_a_bad_request_says_why_and_rejects_nothing(client_for, approver, proposals, data, message):
    data = {"proposal": [proposals[0].pk], **data}
    page = client_for(approver).post(URL, data, follow=True).content.decode()
    assert "Nothing was rejected" in page and message in page
    assert not CompactionProposal.objects.filter(status="rejected").exists()


def test_viewer_cannot_reject(client_for, viewer, proposals):
    assert client_for(viewer).post(URL, {"proposal": [proposals[0].pk], "reason": "x"}).status_code == 403
    assert not CompactionProposal.objects.filter(status="rejected").exists()


def test_the_limit_counts_every_proposal_asked_for_even_unknown_ones(client_for, approver, proposals):
    from memory.web import BULK_LIMIT

    unknown = [900_000 + i for i in range(BULK_LIMIT + 1 - 2)]
    data = {"proposal": [proposals[0].pk, proposals[1].pk, *unknown], "reason": "Noise"}
    page = client_for(approver).post(URL, data, follow=True).content.decode()
    assert f"Nothing was rejected: Decide at most {BULK_LIMIT} proposals at once" in page
    assert "no such proposal" not in page
    assert not CompactionProposal.objects.filter(status="rejected").exists()


def test_a_selection_of_nothing_this_person_may_decide_names_what_was_asked(client_for, approver, proposals):
    data = {"proposal": [424242, 424243], "reason": "Noise"}
    page = client_for(approver).post(URL, data, follow=True).content.decode()
    assert "Nothing was rejected: Proposals 424242, 424243 do not exist or are not yours to decide." in page
    assert "Select at least one" not in page
