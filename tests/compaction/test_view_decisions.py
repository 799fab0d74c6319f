"""Apply, reject and revert through the pages."""

import pytest
from django.urls import reverse

from memory.compaction.services import compaction_propose
from memory.models import CompactionProposal, Lesson
from tests.compaction.helpers import ScriptedEngine, memory_state
from tests.factories import make_lesson

pytestmark = pytest.mark.django_db


@pytest.fixture
def proposal(memory, lessons, good_output, actor):
    return compaction_propose(memory=memory, actor=actor, engine=ScriptedEngine(good_output))


def test_apply_through_the_page(client_for, approver, proposal, memory):
    response = client_for(approver).post(reverse("compaction-apply", args=[proposal.pk]))
    assert response.status_code == 302
    proposal.refresh_from_db()
    assert proposal.status == "applied"
    assert Lesson.objects.filter(memory=memory, status="active", tier="working").count() == 4


def test_apply_of_a_stale_proposal_says_regenerate(client_for, approver, proposal, memory):
    make_lesson(memory, "Written after the proposal about src/late.py")
    before = memory_state(memory)
    response = client_for(approver).post(reverse("compaction-apply", args=[proposal.pk]), follow=True)
    assert "memory changed since this proposal — regenerate" in response.content.decode()
    assert memory_state(memory) == before
    assert CompactionProposal.objects.get(pk=proposal.pk).status == "stale"


def test_reject_through_the_page(client_for, approver, proposal):
    client = client_for(approver)
    response = client.post(reverse("compaction-reject", args=[proposal.pk]), {"reason": ""}, follow=True)
    assert "Say why the proposal is rejected." in response.content.decode()
    client.post(reverse("compaction-reject", args=[proposal.pk]), {"reason": "Too aggressive"})
    proposal.refresh_from_db()
    assert proposal.status == "rejected" and proposal.reason == "Too aggressive"


def test_revert_button_on_an_applied_proposal(client_for, approver, proposal, memory):
    client = client_for(approver)
    before = memory_state(memory)
    client.post(reverse("compaction-apply", args=[proposal.pk]))
    page = client.get(reverse("compaction-detail", args=[proposal.pk])).content.decode()
    assert "Revert this compaction" in page
    client.post(reverse("compaction-revert", args=[proposal.pk]))
    assert CompactionProposal.objects.get(pk=proposal.pk).status == "reverted"
    after = memory_state(memory)
    assert after["working"] == before["working"] and after["core"] == before["core"]


def test_applied_batch_links_to_the_memory_history_and_reverts_from_there(client_for, approver, proposal, memory):
    client = client_for(approver)
    before = memory_state(memory)
    client.post(reverse("compaction-apply", args=[proposal.pk]))
    proposal.refresh_from_db()
    link = f'{memory.history_url()}#batch-{proposal.apply_batch_id}'
    assert f'href="{link}"' in client.get(reverse("compaction-detail", args=[proposal.pk])).content.decode()
    history = client.get(memory.history_url()).content.decode()
    assert f'id="batch-{proposal.apply_batch_id}"' in history
    assert reverse("batch_revert", args=[proposal.apply_batch_id]) in history

    client.post(reverse("batch_revert", args=[proposal.apply_batch_id]))

    assert CompactionProposal.objects.get(pk=proposal.pk).status == "reverted"
    after = memory_state(memory)
    assert after["working"] == before["working"] and after["core"] == before["core"]
    page = client.get(reverse("compaction-detail", args=[proposal.pk])).content.decode()
    assert f'href="{link}"' in page and "Revert this compaction" not in page
