"""Reverting part of a batch whose changes depend on each other never loses knowledge.

A promotion, a compaction and a refinement run each put lessons in place of others. A single
change is reverted together with the changes that depend on it; the whole batch can still be
reverted after any partial revert; the candidate, proposal and run follow.
"""

from datetime import date

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory import services
from memory.compaction.services import compaction_apply, compaction_propose
from memory.models import Change, CompactionProposal, Lesson, LessonStatus, PromotionCandidate, RefinementRun
from memory.promotions.services import promotion_approve, promotion_detect
from memory.services import RevertError, batch_revert, change_revert
from tests.compaction.helpers import ScriptedEngine as CompactionEngine
from tests.factories import MemoryFactory, ProjectFactory, make_lesson
from tests.promotions.conftest import THEME
from tests.refinement.helpers import core, run_with
from tests.refinement.scripted import ScriptedEngine as RefinementEngine

pytestmark = pytest.mark.django_db

ACTIVE = LessonStatus.ACTIVE


def _memory(persona, name):
    return MemoryFactory(persona=persona, project=ProjectFactory(slug=name, name=name))


def promoted(persona, actor):
    memory = _memory(persona, "promotion")
    for i, (text, ref) in enumerate(THEME):
        make_lesson(memory, text, refs=ref, day=date(2026, 1, 1 + i))
    candidate = promotion_detect(memory=memory).created[0]
    before = active_texts(memory)
    return promotion_approve(candidate=candidate, actor=actor).candidate.batch, before


def compacted(persona, actor):
    memory = _memory(persona, "compaction")
    memory.compaction_target_lines = 3
    memory.save()
    a = make_lesson(memory, "Retry uses a fixed 1s delay", refs="src/queue/worker.ts#L88-L95")
    b = make_lesson(memory, "Queue worker retry has no backoff", refs="src/queue/worker.ts#L88-L95")
    c = make_lesson(memory, "look into error handling", category="TODO", relevance="low")
    d = make_lesson(memory, "Reports endpoint runs one query per row", refs="src/reports/views.py#L12-L30")
    output = (
        "- [OBSERVATION] Queue worker retries after a fixed 1s with no backoff "
        f"(ref: src/queue/worker.ts#L88-L95) {{ids: {a.pk}, {b.pk}}}\n"
        "- [OBSERVATION] Reports endpoint issues one query per row (N+1) (ref: src/reports/views.py#L12-L30) "
        f"{{ids: {d.pk}}}\n"
        f"DROP {{ids: {c.pk}}}: too vague to act on\n"
    )
    proposal = compaction_propose(memory=memory, actor=actor, engine=CompactionEngine(output))
    before = active_texts(memory)
    return compaction_apply(proposal=proposal, actor=actor), before


def refined(persona):
    memory = _memory(persona, "refinement")
    a = core(memory, "Run the linter before pushing to the shared branch")
    b = core(memory, "Run the linter before you push to the shared branch")
    c = core(memory, "Deploys happen on Tuesdays only, after the change-advisory meeting")
    d = core(memory, "The payments service owns the ledger tables; nobody else writes to them")
    for i in range(10):
        core(memory, f"Filler lesson {i}: the search index is rebuilt nightly from the primary database")
    before = active_texts(memory)
    run = run_with(
        memory,
        RefinementEngine(
            [
                ("consolidate", {"ids": [a.pk, b.pk], "text": "Run the linter before every push to the shared branch"}),
                ("protect", {"id": d.pk}),
                ("update", {"id": c.pk, "text": "Deploys happen on Tuesdays only, after the change-advisory meeting."}),
                ("protect", {"id": c.pk}),
                ("complete", {}),
            ]
        ),
    )
    assert run.status == RefinementRun.Status.COMPLETED, run.error
    return run.batch, before


def active_texts(memory):
    return set(Lesson.objects.filter(memory=memory, status=ACTIVE).values_list("text", flat=True))


def assert_knowledge_kept(memory):
    """Every lesson retired into another one has that other one, or a successor of it, active."""
    for lesson in Lesson.objects.filter(memory=memory, status__in=[LessonStatus.PROMOTED, LessonStatus.SUPERSEDED]):
        holders, seen = list(lesson.derivatives.all()), set()
        if lesson.superseded_by_id:
            holders.append(lesson.superseded_by)
        while holders:
            holder = holders.pop()
            if holder.status == ACTIVE:
                break
            if holder.pk not in seen:
                seen.add(holder.pk)
                holders.extend(holder.derivatives.all())
        else:
            pytest.fail(f"lesson {lesson.pk} ({lesson.text!r}) is {lesson.status} and nothing active holds it")


def test_reverting_the_new_core_lesson_brings_every_supporting_lesson_back(persona, approver):
    batch, _ = promoted(persona, services.Actor.for_user(approver))
    create = batch.changes.get(action=Change.Action.CREATE)
    change_revert(change=create, actor=services.Actor.for_user(approver))
    supporting = Lesson.objects.filter(memory=batch.memory, tier="working")
    assert set(supporting.values_list("status", flat=True)) == {ACTIVE}
    assert Lesson.objects.get(pk=create.lesson_id).status == LessonStatus.DELETED
    batch.refresh_from_db()
    assert batch.reverted_by is not None and not batch.changes.filter(reverted_by__isnull=True).exists()
    assert PromotionCandidate.objects.get(batch=batch).status == PromotionCandidate.Status.REVERTED
    with pytest.raises(RevertError, match="already reverted"):
        batch_revert(batch=batch, actor=services.Actor.for_user(approver))


def test_one_supporting_lesson_alone_then_the_whole_batch(persona, approver):
    actor = services.Actor.for_user(approver)
    batch, _ = promoted(persona, actor)
    first = batch.changes.filter(action=Change.Action.PROMOTE).order_by("id").first()
    revert = change_revert(change=first, actor=actor)
    assert revert.batch.changes.count() == 1  # bringing one lesson back beside the core one loses nothing
    assert Lesson.objects.get(pk=first.lesson_id).status == ACTIVE
    candidate = PromotionCandidate.objects.get(batch=batch)
    assert candidate.status == PromotionCandidate.Status.APPROVED  # the core lesson still stands

    batch_revert(batch=batch, actor=actor)
    assert set(Lesson.objects.filter(memory=batch.memory, tier="working").values_list("status", flat=True)) == {ACTIVE}
    assert not Lesson.objects.filter(memory=batch.memory, tier="core", status=ACTIVE).exists()
    candidate.refresh_from_db()
    assert candidate.status == PromotionCandidate.Status.REVERTED


def test_reverting_a_merged_lesson_restores_its_sources_and_nothing_else(persona, approver):
    actor = services.Actor.for_user(approver)
    batch, _ = compacted(persona, actor)
    merged = Lesson.objects.get(memory=batch.memory, status=ACTIVE, text__startswith="Queue worker retries")
    change_revert(change=batch.changes.get(lesson=merged, action=Change.Action.CREATE), actor=actor)
    texts = active_texts(batch.memory)
    assert {"Retry uses a fixed 1s delay", "Queue worker retry has no backoff"} <= texts
    assert "look into error handling" not in texts  # the drop is not tied to the merge
    assert Lesson.objects.get(text="Retry uses a fixed 1s delay").superseded_by is None
    proposal = CompactionProposal.objects.get(apply_batch=batch)
    assert proposal.status == CompactionProposal.Status.APPLIED
    batch_revert(batch=batch, actor=actor)
    proposal.refresh_from_db()
    assert proposal.status == CompactionProposal.Status.REVERTED
    assert "look into error handling" in active_texts(batch.memory)


def test_a_lesson_changed_again_in_the_same_run_refuses_a_partial_revert(persona):
    batch, _ = refined(persona)
    update = batch.changes.get(action=Change.Action.UPDATE)
    services.lesson_update(lesson=update.lesson, actor=services.Actor.system("tests"), text="Edited by hand later")
    with pytest.raises(RevertError, match="changed again"):
        change_revert(change=update, actor=services.Actor.system("tests"))
    assert not batch.changes.filter(reverted_by__isnull=False).exists()  # refused: nothing changed


OPS = st.lists(
    st.tuples(
        st.sampled_from(["promotion", "compaction", "refinement"]),
        st.sampled_from(["change", "batch"]),
        st.integers(0, 20),
    ),
    max_size=6,
)


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(ops=OPS)
def test_any_sequence_of_reverts_keeps_every_pre_batch_lesson(persona, approver, ops):
    PromotionCandidate.objects.all().delete()
    for memory in persona.memories.all():
        memory.project.delete()
    actor = services.Actor.for_user(approver)
    batches, before = {}, {}
    batches["promotion"], before["promotion"] = promoted(persona, actor)
    batches["compaction"], before["compaction"] = compacted(persona, actor)
    batches["refinement"], before["refinement"] = refined(persona)
    memories = {kind: batch.memory for kind, batch in batches.items()}

    for kind, scope, pick in ops:
        batch = batches[kind]
        try:
            if scope == "batch":
                batch_revert(batch=batch, actor=actor)
            else:
                changes = list(batch.changes.order_by("id"))
                change_revert(change=changes[pick % len(changes)], actor=actor)
        except RevertError:
            pass  # a refusal changes nothing, and says why
        for memory in memories.values():
            assert_knowledge_kept(memory)

    for kind, batch in batches.items():
        batch.refresh_from_db()
        if batch.reverted_by_id is None:
            batch_revert(batch=batch, actor=actor)  # whatever was reverted before, the whole batch still goes
        batch.refresh_from_db()
        assert batch.reverted_by_id is not None
        assert before[kind] <= active_texts(memories[kind]), kind
    assert PromotionCandidate.objects.get(batch=batches["promotion"]).status == PromotionCandidate.Status.REVERTED
    assert (
        CompactionProposal.objects.get(apply_batch=batches["compaction"]).status == CompactionProposal.Status.REVERTED
    )
    assert RefinementRun.objects.get(batch=batches["refinement"]).status == RefinementRun.Status.REVERTED
