"""Undoing an approver's decision takes an approver: a curator cannot revert a promotion, compaction,
refinement or pipeline batch from the history pages (batch or single change), nor redo one by
reverting its revert. Curators still revert everything else."""

from datetime import date

import pytest

from memory import services
from memory.compaction.services import compaction_apply, compaction_propose
from memory.models import Change, ChangeBatch, Lesson, LessonStatus
from memory.promotions.services import promotion_approve, promotion_detect
from tests.compaction.helpers import ScriptedEngine
from tests.factories import make_lesson

pytestmark = pytest.mark.django_db


def _lessons_state(memory):
    return sorted(Lesson.objects.filter(memory=memory).values_list("pk", "status", "tier"))


@pytest.fixture
def promotion_batch(memory, approver):
    for i, text in enumerate(
        [
            "Verify the webhook signature before parsing the payload",
            "Webhook payload parsing happens after signature verification",
            "Verify webhook signatures first; parsing before it accepted forged events",
        ]
    ):
        make_lesson(memory, text, refs="src/webhooks.py#L10", day=date(2026, 1, i + 1))
    candidate = promotion_detect(memory=memory).created[0]
    return promotion_approve(candidate=candidate, actor=services.Actor.for_user(approver)).candidate.batch


@pytest.fixture
def compaction_batch(memory, approver):
    a = make_lesson(memory, "Retry uses a fixed delay", refs="src/worker.py#L1")
    b = make_lesson(memory, "The worker retries with no backoff", refs="src/worker.py#L1")
    memory.compaction_target_lines = 5
    memory.save()
    actor = services.Actor.for_user(approver)
    proposal = compaction_propose(
        memory=memory,
        actor=actor,
        engine=ScriptedEngine(
            f"- [OBSERVATION] The worker retries after a fixed delay, no backoff (ref: src/worker.py#L1) "
            f"{{ids: {a.pk}, {b.pk}}}\n"
        ),
    )
    return compaction_apply(proposal=proposal, actor=actor)


@pytest.fixture(params=["promotion", "compaction"])
def approver_batch(request):
    return request.getfixturevalue(f"{request.param}_batch")


def test_curator_cannot_revert_an_approvers_batch(client_for, curator, memory, approver_batch):
    before = _lessons_state(memory)
    response = client_for(curator).post(f"/batches/{approver_batch.pk}/revert/", {"reason": "undo"})
    assert response.status_code == 403
    assert _lessons_state(memory) == before
    assert ChangeBatch.objects.get(pk=approver_batch.pk).reverted_by_id is None


def test_curator_cannot_revert_one_change_of_an_approvers_batch(client_for, curator, memory, approver_batch):
    change = Change.objects.filter(batch=approver_batch).first()
    before = _lessons_state(memory)
    response = client_for(curator).post(f"/changes/{change.pk}/revert/")
    assert response.status_code == 403
    assert _lessons_state(memory) == before


def test_approver_reverts_it_and_a_curator_cannot_redo_it(client_for, curator, approver, memory, approver_batch):
    before = _lessons_state(memory)
    client_for(approver).post(f"/batches/{approver_batch.pk}/revert/", {"reason": "wrong call"})
    revert = ChangeBatch.objects.get(pk=approver_batch.pk).reverted_by
    assert revert is not None
    reverted = _lessons_state(memory)
    assert reverted != before
    # Reverting the revert would re-apply the approver's decision.
    assert client_for(curator).post(f"/batches/{revert.pk}/revert/").status_code == 403
    assert _lessons_state(memory) == reverted


def test_the_service_refuses_a_curator_too(curator, approver_batch):
    with pytest.raises(services.PermissionDenied):
        services.batch_revert(batch=approver_batch, actor=services.Actor.for_user(curator))


def test_curator_still_reverts_manual_and_agent_batches(client_for, curator, memory):
    batch = services.batch_create(memory=memory, kind=ChangeBatch.Kind.AGENT, actor=services.Actor.system("agent"))
    lesson = make_lesson(memory, "Agent lesson", batch=batch)
    response = client_for(curator).post(f"/batches/{batch.pk}/revert/", {"reason": "noise"})
    assert response.status_code == 302
    lesson.refresh_from_db()
    assert lesson.status == LessonStatus.DELETED


def test_the_history_page_offers_a_curator_no_revert_of_an_approvers_batch(
    client_for, curator, approver, memory, approver_batch
):
    url = memory.history_url()
    revert_url = f"/batches/{approver_batch.pk}/revert/"
    assert revert_url not in client_for(curator).get(url).content.decode()
    assert revert_url in client_for(approver).get(url).content.decode()
