"""Apply a valid proposal, revert it exactly; refuse stale ones; never touch core."""

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from memory import services
from memory.compaction.selectors import proposal_for_review, proposal_review
from memory.compaction.services import (
    CompactionError,
    StaleProposal,
    compaction_apply,
    compaction_line_update,
    compaction_propose,
    compaction_reject,
    compaction_revert,
)
from memory.models import ChangeBatch, CompactionProposal, Lesson, LessonStatus, Memory
from tests.compaction.helpers import ScriptedEngine, memory_state, working_set

pytestmark = pytest.mark.django_db


@pytest.fixture
def proposal(memory, lessons, good_output, actor):
    return compaction_propose(memory=memory, actor=actor, engine=ScriptedEngine(good_output))


def test_lesson_level_view_classifies_lines(proposal, lessons):
    review = proposal_review(proposal_for_review(proposal.pk))
    kinds = {tuple(s.pk for s in v.sources): v.line.kind for v in review.lines}
    assert kinds == {
        (lessons["a"].pk, lessons["b"].pk): "merged",
        (lessons["d"].pk,): "kept",
        (lessons["e"].pk,): "kept",
        (lessons["f"].pk,): "rewritten",
    }
    (drop,) = review.drops
    assert drop.lesson_id == lessons["c"].pk and drop.reason == "too vague to act on" and not drop.had_refs
    assert review.lines_before == 6 and review.lines_after == 4


def test_apply_compacts_working_memory_and_leaves_core_alone(memory, lessons, proposal, actor):
    before = memory_state(memory)
    expected_text = proposal_review(proposal_for_review(proposal.pk)).after_text

    batch = compaction_apply(proposal=proposal, actor=actor)

    after = memory_state(memory)
    assert after["working"] == expected_text  # the preview is exactly what got applied
    assert after["core"] == before["core"]
    assert after["version"] > before["version"]
    core = Lesson.objects.get(pk=lessons["core"].pk)
    assert core.status == LessonStatus.ACTIVE and not core.changes.filter(batch=batch).exists()

    proposal.refresh_from_db()
    assert proposal.status == CompactionProposal.Status.APPLIED and proposal.apply_batch == batch
    assert batch.kind == ChangeBatch.Kind.COMPACTION
    assert Memory.objects.get(pk=memory.pk).last_compacted_at is not None

    merged = Lesson.objects.get(memory=memory, status="active", text__startswith="Queue worker retries")
    assert set(merged.derived_from.values_list("pk", flat=True)) == {lessons["a"].pk, lessons["b"].pk}
    for key in "ab":
        old = Lesson.objects.get(pk=lessons[key].pk)
        assert old.status == LessonStatus.SUPERSEDED and old.superseded_by == merged
    assert Lesson.objects.get(pk=lessons["c"].pk).status == LessonStatus.DELETED  # soft, restorable
    for key in "de":  # must-keep lessons are the very same rows
        assert Lesson.objects.get(pk=lessons[key].pk).status == LessonStatus.ACTIVE
    rewritten = Lesson.objects.get(memory=memory, status="active", text__contains="(N+1)")
    assert [r.as_text() for r in rewritten.refs.all()] == ["src/reports/views.py#L12-L30"]


def test_revert_restores_exactly_the_previous_working_memory(memory, lessons, proposal, actor):
    before_set = working_set(memory)
    before = memory_state(memory)
    compaction_apply(proposal=proposal, actor=actor)
    assert working_set(memory) != before_set

    compaction_revert(proposal=proposal, actor=actor)

    assert working_set(memory) == before_set
    after = memory_state(memory)
    assert after["working"] == before["working"] and after["core"] == before["core"]
    assert not Lesson.objects.filter(
        pk__in=[lesson.pk for lesson in lessons.values()], superseded_by__isnull=False
    ).exists()
    proposal.refresh_from_db()
    assert proposal.status == CompactionProposal.Status.REVERTED
    with pytest.raises(CompactionError):
        compaction_revert(proposal=proposal, actor=actor)


def test_revert_from_the_history_batch_marks_the_proposal(memory, lessons, proposal, actor):
    batch = compaction_apply(proposal=proposal, actor=actor)
    services.batch_revert(batch=batch, actor=actor)
    proposal.refresh_from_db()
    assert proposal.status == CompactionProposal.Status.REVERTED


def test_stale_proposal_is_refused_and_marked(memory, lessons, proposal, actor, curator):
    editor = services.Actor.for_user(curator)
    services.lesson_update(lesson=lessons["f"], actor=editor, text="Reports endpoint runs two queries per row")
    before = memory_state(memory)
    with pytest.raises(StaleProposal, match=f"Lesson #{lessons['f'].pk} was edited"):
        compaction_apply(proposal=proposal, actor=actor)
    assert memory_state(memory) == before
    proposal.refresh_from_db()
    assert proposal.status == CompactionProposal.Status.STALE
    assert f"Lesson #{lessons['f'].pk} was edited" in proposal.reason and "by curator" in proposal.reason
    # a stale proposal no longer blocks a new one
    assert compaction_propose(memory=memory, actor=actor).status in ("pending", "invalid")


def test_only_one_pending_proposal_per_memory(memory, lessons, proposal, actor, good_output):
    with pytest.raises(CompactionError, match="already waiting for review"):
        compaction_propose(memory=memory, actor=actor, engine=ScriptedEngine(good_output))
    with pytest.raises(IntegrityError), transaction.atomic():
        CompactionProposal.objects.create(
            memory=memory, base_version=0, engine="offline", target_lines=4, before_text="", status="pending"
        )


def test_edit_a_line_then_apply(memory, lessons, proposal, actor):
    line = next(line for line in proposal.lines.all() if line.source_ids == [lessons["f"].pk])
    compaction_line_update(
        line=line,
        actor=actor,
        category="TODO",
        text="Batch the reports endpoint queries",
        refs="src/reports/views.py#L12-L30",
    )
    line.refresh_from_db()
    assert line.edited and line.kind == "rewritten" and line.category == "TODO"
    compaction_apply(proposal=proposal, actor=actor)
    assert Lesson.objects.filter(
        memory=memory, status="active", category="TODO", text="Batch the reports endpoint queries"
    ).exists()


@pytest.mark.parametrize(
    "changes,message",
    [
        ({"refs": ""}, "is in no proposed line"),
        ({"category": "IDEA"}, "Choose a category"),
        ({"text": "  "}, "must not be empty"),
        ({"refs": "not a ref at all"}, "bad reference"),
    ],
)
def test_an_edit_that_breaks_a_rule_changes_nothing(memory, lessons, proposal, actor, changes, message):
    line = next(line for line in proposal.lines.all() if line.source_ids == [lessons["f"].pk])
    fields = {"category": line.category, "text": line.text, "refs": ", ".join(line.refs), **changes}
    with pytest.raises(ValidationError) as exc:
        compaction_line_update(line=line, actor=actor, **fields)
    assert any(message in m for m in exc.value.messages), exc.value.messages
    fresh = type(line).objects.get(pk=line.pk)
    assert (fresh.category, fresh.text, fresh.refs, fresh.edited) == (line.category, line.text, line.refs, False)


def test_editing_a_protected_line_is_refused(memory, lessons, proposal, actor):
    line = next(line for line in proposal.lines.all() if line.source_ids == [lessons["d"].pk])
    with pytest.raises(ValidationError, match="protected"):
        compaction_line_update(
            line=line, actor=actor, category="DECISION", text="Something else", refs="src/events/store.ts#L5-L15"
        )


def test_reject_needs_a_reason_and_closes_the_proposal(memory, lessons, proposal, actor):
    with pytest.raises(ValidationError):
        compaction_reject(proposal=proposal, actor=actor, reason=" ")
    compaction_reject(proposal=proposal, actor=actor, reason="Merges two unrelated retries")
    proposal.refresh_from_db()
    assert proposal.status == "rejected" and proposal.reason == "Merges two unrelated retries"
    with pytest.raises(CompactionError):
        compaction_apply(proposal=proposal, actor=actor)


def test_reverting_the_revert_applies_the_compaction_again(memory, lessons, proposal, actor):
    original = working_set(memory)
    compaction_apply(proposal=proposal, actor=actor)
    compacted = memory_state(memory)["working"]
    revert = compaction_revert(proposal=proposal, actor=actor)

    services.batch_revert(batch=revert, actor=actor)

    proposal.refresh_from_db()
    assert proposal.status == CompactionProposal.Status.APPLIED
    assert memory_state(memory)["working"] == compacted
    merged = Lesson.objects.get(memory=memory, status="active", text__startswith="Queue worker retries")
    assert Lesson.objects.get(pk=lessons["a"].pk).superseded_by == merged
    compaction_revert(proposal=proposal, actor=actor)  # and it can be reverted again
    assert working_set(memory) == original
    assert Lesson.objects.get(pk=lessons["a"].pk).superseded_by is None
