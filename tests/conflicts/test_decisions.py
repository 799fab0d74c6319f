"""The reviewers' decisions as services: each keeping decision is one batch that revert undoes, and
"edit one, then keep it" checks the new text as any lesson edit does, changing nothing on an error."""

import pytest
from django.core.exceptions import ValidationError

from memory import services
from memory.conflicts.selectors import marked_lesson_ids
from memory.conflicts.services import (
    conflict_edit_and_keep,
    conflict_keep_newer,
    conflict_keep_older,
)
from memory.models import Change, ChangeBatch, Lesson, LessonConflict, LessonStatus
from tests.conflicts.conftest import make_conflict

pytestmark = pytest.mark.django_db
LEAD = services.Actor.system("lead")


def _state(conflict):
    lessons = Lesson.objects.filter(pk__in=[conflict.older_id, conflict.newer_id]).order_by("pk")
    return [
        (lesson.text, lesson.category, lesson.status, [r.as_text() for r in lesson.refs.all()]) for lesson in lessons
    ]


def test_edit_the_newer_and_keep_it_supersedes_the_older_in_one_batch(memory, conflict):
    decided = conflict_edit_and_keep(
        conflict=conflict,
        keep="newer",
        text="Queue 0 workers run with dramatiq 1.17 (see the queue ADR).",
        category="DECISION",
        refs="docs/adr/0007-queue.md",
        actor=LEAD,
        reason="worded for agents",
    )
    assert decided.status == LessonConflict.Status.RESOLVED and decided.decision == "keep_newer"
    older, newer = Lesson.objects.get(pk=conflict.older_id), Lesson.objects.get(pk=conflict.newer_id)
    assert newer.text == "Queue 0 workers run with dramatiq 1.17 (see the queue ADR)."
    assert newer.category == "DECISION" and [r.as_text() for r in newer.refs.all()] == ["docs/adr/0007-queue.md"]
    assert older.status == LessonStatus.SUPERSEDED and older.superseded_by_id == newer.pk
    batch = decided.batch
    assert batch.label == "Conflict: edited the newer lesson, then kept it" and batch.reason == "worded for agents"
    assert sorted(batch.changes.values_list("action", flat=True)) == sorted(
        [Change.Action.UPDATE, Change.Action.SUPERSEDE]
    )
    assert marked_lesson_ids(memory.pk) == set()


def test_edit_the_older_and_keep_it_deletes_the_newer_softly(conflict):
    before = _state(conflict)
    decided = conflict_edit_and_keep(
        conflict=conflict, keep="older", text="Queue 0 workers still run with celery 5.", actor=LEAD
    )
    older, newer = Lesson.objects.get(pk=conflict.older_id), Lesson.objects.get(pk=conflict.newer_id)
    assert decided.decision == "keep_older" and older.text == "Queue 0 workers still run with celery 5."
    assert older.status == LessonStatus.ACTIVE and newer.status == LessonStatus.DELETED
    # Category and refs not given: left as they were.
    assert older.category == before[0][1] and [r.as_text() for r in older.refs.all()] == before[0][3]

    services.batch_revert(batch=decided.batch, actor=LEAD)
    conflict.refresh_from_db()
    assert conflict.status == LessonConflict.Status.PENDING and conflict.batch is None and conflict.decided_at is None
    assert _state(conflict) == before


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        ({"text": "   "}, "text", "lesson text must not be empty"),
        ({"text": "Queue 0 runs \x07 dramatiq"}, "text", "control"),
        ({"text": "x" * 5000}, "text", "lesson text"),
        ({"text": "Queue 0 runs dramatiq.", "category": "NOT-A-CATEGORY"}, "category", "category for working lessons"),
        ({"text": "Queue 0 runs dramatiq.", "refs": "src/a.py#L9-L2"}, "refs", ""),
    ],
)
def test_a_bad_edit_changes_nothing(conflict, fields, field, message):
    before = _state(conflict)
    batches = ChangeBatch.objects.count()
    with pytest.raises(ValidationError) as caught:
        conflict_edit_and_keep(conflict=conflict, keep="newer", actor=LEAD, **fields)
    assert field in caught.value.message_dict and message in " ".join(caught.value.message_dict[field])
    conflict.refresh_from_db()
    assert conflict.status == LessonConflict.Status.PENDING and conflict.batch is None
    assert _state(conflict) == before and ChangeBatch.objects.count() == batches


def test_keep_must_name_a_side(conflict):
    with pytest.raises(ValidationError, match="keep must be newer or older"):
        conflict_edit_and_keep(conflict=conflict, keep="both", text="Queue 0 runs dramatiq.", actor=LEAD)


def test_a_decided_conflict_cannot_be_decided_again(conflict):
    conflict_keep_newer(conflict=conflict, actor=LEAD)
    with pytest.raises(ValidationError, match="already resolved"):
        conflict_edit_and_keep(conflict=conflict, keep="older", text="Queue 0 runs celery.", actor=LEAD)


def test_a_conflict_whose_lesson_was_retired_meanwhile_is_not_decided(memory, conflict):
    services.lesson_delete(lesson=conflict.newer, actor=LEAD)
    with pytest.raises(ValidationError, match=r"the newer lesson \(#\d+\) is deleted"):
        conflict_keep_older(conflict=conflict, actor=LEAD)
    with pytest.raises(ValidationError, match="restore it before deciding"):
        conflict_edit_and_keep(conflict=conflict, keep="older", text="Queue 0 runs celery.", actor=LEAD)
    assert Lesson.objects.get(pk=conflict.older_id).text == "Queue 0 workers run with celery."


def test_each_keeping_decision_reverts_to_pending(memory):
    for n, decide in enumerate((conflict_keep_newer, conflict_keep_older)):
        conflict = make_conflict(memory, n + 1)
        before = _state(conflict)
        decided = decide(conflict=conflict, actor=LEAD)
        assert _state(conflict) != before
        services.batch_revert(batch=decided.batch, actor=LEAD)
        conflict.refresh_from_db()
        assert conflict.status == "pending" and _state(conflict) == before
    assert len(marked_lesson_ids(memory.pk)) == 2


def test_an_edit_is_announced_as_such_and_a_refused_one_not_at_all(conflict):
    from memory.signals import review_event

    heard = []

    def listen(sender, event_type, data, **kwargs):
        heard.append((event_type, data.get("decision")))

    review_event.connect(listen, dispatch_uid="tests.conflict-decisions")
    try:
        with pytest.raises(ValidationError):
            conflict_edit_and_keep(conflict=conflict, keep="newer", text="", actor=LEAD)
        conflict_edit_and_keep(conflict=conflict, keep="newer", text="Queue 0 runs dramatiq.", actor=LEAD)
    finally:
        review_event.disconnect(dispatch_uid="tests.conflict-decisions")
    assert heard == [("review.decided", "keep newer, edited")]
