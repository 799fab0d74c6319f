"""One click on a stale proposal makes a new one from the memory as it is now, linked both ways."""

import pytest
from django.urls import reverse

from memory import services
from memory.compaction.services import compaction_propose
from memory.models import CompactionProposal, Lesson
from tests.compaction.helpers import ScriptedEngine

pytestmark = pytest.mark.django_db


@pytest.fixture
def proposal(memory, lessons, good_output, actor):
    return compaction_propose(memory=memory, actor=actor, engine=ScriptedEngine(good_output))


def test_recompute_replaces_a_stale_proposal_and_links_the_two(
    client_for, approver, curator, proposal, memory, lessons, django_capture_on_commit_callbacks
):
    edited = services.lesson_update(
        lesson=lessons["b"],
        text="Queue worker retry has no backoff and no jitter",
        actor=services.Actor.for_user(curator),
    )
    client = client_for(approver)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("compaction-recompute", args=[proposal.pk]))
    assert response["Location"] == reverse("compaction-detail", args=[proposal.pk])

    old = CompactionProposal.objects.get(pk=proposal.pk)
    new = CompactionProposal.objects.get(recomputed_from=old)
    assert old.status == "stale" and f"Lesson #{lessons['b'].pk} was edited" in old.reason
    assert new.status in ("pending", "invalid") and new.created_by == approver
    # The new proposal is computed from the memory as it is now: it reads the edited lesson.
    assert lessons["b"].pk in new.input_lesson_ids
    assert new.input_fingerprints[str(edited.pk)] != old.input_fingerprints[str(edited.pk)]
    old_page = client.get(reverse("compaction-detail", args=[old.pk])).content.decode()
    assert "the new proposal is linked from this page" in old_page
    assert f'href="{reverse("compaction-detail", args=[new.pk])}" id="recomputed-link"' in old_page
    assert 'id="recompute-button"' not in old_page
    new_page = client.get(reverse("compaction-detail", args=[new.pk])).content.decode()
    assert f'href="{reverse("compaction-detail", args=[old.pk])}" id="recomputed-from"' in new_page


def test_recompute_is_refused_while_nothing_covered_changed(client_for, approver, proposal, memory):
    from tests.factories import make_lesson

    make_lesson(memory, "Appended after the proposal about src/new.py")
    response = client_for(approver).post(reverse("compaction-recompute", args=[proposal.pk]), follow=True)
    assert "Not recomputed: Nothing this proposal covers has changed" in response.content.decode()
    assert CompactionProposal.objects.get(pk=proposal.pk).status == "pending"
    assert not CompactionProposal.objects.filter(recomputed_from=proposal).exists()


def test_recompute_takes_the_approver_role(client_for, curator, proposal, lessons):
    services.lesson_delete(lesson=lessons["c"], actor=services.Actor.for_user(curator))
    response = client_for(curator).post(reverse("compaction-recompute", args=[proposal.pk]))
    assert response.status_code == 403
    assert CompactionProposal.objects.get(pk=proposal.pk).status == "pending"
    assert Lesson.objects.get(pk=lessons["c"].pk).status == "deleted"
