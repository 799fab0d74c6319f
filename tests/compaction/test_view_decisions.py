"""Apply, reject and revert through the pages."""

import pytest
from django.urls import reverse

from memory import services
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


def test_apply_of_a_stale_proposal_says_which_lesson_changed(client_for, approver, curator, proposal, memory, lessons):
    services.lesson_set_protected(lesson=lessons["c"], protected=True, actor=services.Actor.for_user(curator))
    before = memory_state(memory)
    response = client_for(approver).post(reverse("compaction-apply", args=[proposal.pk]), follow=True)
    page = response.content.decode()
    assert f"Not applied: Lesson #{lessons['c'].pk} was protected by curator" in page
    assert 'id="recompute-button"' in page
    assert memory_state(memory) == before
    assert CompactionProposal.objects.get(pk=proposal.pk).status == "stale"


def test_apply_with_lessons_appended_since_keeps_them(client_for, approver, proposal, memory):
    late = make_lesson(memory, "Written after the proposal about src/late.py", refs="src/late.py#L3")
    response = client_for(approver).post(reverse("compaction-apply", args=[proposal.pk]), follow=True)
    assert "Compaction applied" in response.content.decode()
    assert CompactionProposal.objects.get(pk=proposal.pk).status == "applied"
    assert Lesson.objects.get(pk=late.pk).status == "active"


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
    link = f"{memory.history_url()}#batch-{proposal.apply_batch_id}"
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


def test_apply_says_when_the_kept_lessons_leave_working_memory_over_budget(client_for, approver, proposal, memory):
    for i in range(3):
        make_lesson(memory, f"Appended while the proposal waited: upload retry note {i} in src/upload/r_{i}.py")
    memory.working_char_budget = 300
    memory.save()
    response = client_for(approver).post(reverse("compaction-apply", args=[proposal.pk]), follow=True)
    html = response.content.decode()
    assert "Compaction applied" in html
    assert "Working memory is still over its limits: working.md is " in html
    assert "over the budget of 300" in html
    assert "3 lessons were written after the proposal was made and kept as they are" in html


def test_apply_within_budget_says_nothing_about_the_budget(client_for, approver, proposal):
    html = client_for(approver).post(reverse("compaction-apply", args=[proposal.pk]), follow=True).content.decode()
    assert "Compaction applied" in html and "still over its limits" not in html
