"""Undoing what a change or a whole batch did, as a new batch of its own (revertible in turn)."""

from typing import Any

from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.template.defaultfilters import pluralize

from memory.access import APPROVE, can
from memory.history.batches import Actor, batch_create, memory_bump_version, record_change
from memory.history.snapshots import apply_snapshot, lesson_snapshot
from memory.models import ActorType, Change, ChangeBatch, Lesson, LessonStatus
from memory.signals import batch_reverted


class RevertError(Exception):
    """A revert that would corrupt memory; the message says why, for the person who asked."""


# Batches only an approver can make; undoing one (or redoing it by reverting its revert) is the
# same decision, so it needs the same role.
APPROVER_BATCH_KINDS = (
    ChangeBatch.Kind.PROMOTION,
    ChangeBatch.Kind.COMPACTION,
    ChangeBatch.Kind.REFINEMENT,
    ChangeBatch.Kind.PIPELINE,
)


def batch_decided_by_approver(batch: ChangeBatch, _depth: int = 0) -> bool:
    """True when the batch is an approver's kind, or a revert (of a revert…) of one."""
    if batch.kind in APPROVER_BATCH_KINDS:
        return True
    if batch.kind != ChangeBatch.Kind.REVERT or _depth > 20:
        return False
    originals = ChangeBatch.objects.filter(changes__reverted_by__batch=batch).distinct()
    return any(batch_decided_by_approver(original, _depth + 1) for original in originals)


def _require_role_to_revert(batch: ChangeBatch, actor: Actor) -> None:
    if (
        actor.type == ActorType.USER
        and batch_decided_by_approver(batch)
        and not (actor.user is not None and can(actor.user, APPROVE, batch.memory))
    ):
        raise PermissionDenied(
            f"Reverting {batch.get_kind_display().lower()} #{batch.pk} needs the approver role: "
            "an approver's decision is undone by an approver."
        )


def _check_revertible(lesson: Lesson, expected_after: Any) -> None:
    current = lesson_snapshot(lesson)
    if current != expected_after:
        raise RevertError(
            f"Lesson {lesson.pk} was changed again after this; revert the later change first "
            "(see the lesson's history)."
        )


def _status(snapshot: Any) -> Any:
    return (snapshot or {}).get("status")


def dependent_changes(change: Change) -> list[Change]:
    """The changes of `change`'s batch that must be undone together with it (those not undone yet).

    A batch that puts one lesson in place of others (a promotion, a compaction merge, a refinement
    consolidation, or the revert of one of those) ties them: the lesson it made active holds the
    knowledge of the lessons it retired. Undoing that activation alone would leave the knowledge in
    neither tier, so the retired lessons come back with it (and, when one of them only came to be in
    this batch, what it retired in turn). Undoing a retirement alone only brings a lesson back beside
    the one that holds it, which loses nothing, so it stands alone.
    """
    if _status(change.before) == LessonStatus.ACTIVE or _status(change.after) != LessonStatus.ACTIVE:
        return []
    changes = list(change.batch.changes.order_by("id"))
    last_after: dict[int, Any] = {}
    first_pending_before: dict[int, Any] = {}
    for c in changes:
        last_after[c.lesson_id] = c.after
        if c.reverted_by_id is None:
            first_pending_before.setdefault(c.lesson_id, c.before)
    retired = {
        pk
        for pk, before in first_pending_before.items()
        if _status(last_after[pk]) != LessonStatus.ACTIVE and _status(before) != _status(last_after[pk])
    }
    ids = set(last_after)
    links: dict[int, set[int]] = {}
    derived = Lesson.derived_from.through.objects.filter(from_lesson_id__in=ids, to_lesson_id__in=ids).values_list(
        "from_lesson_id", "to_lesson_id"
    )
    pairs = {
        *derived,
        *Lesson.objects.filter(pk__in=ids, superseded_by_id__in=ids).values_list("pk", "superseded_by_id"),
    }
    for a, b in pairs:
        links.setdefault(a, set()).add(b)
        links.setdefault(b, set()).add(a)
    tied, todo = set(), [change.lesson_id]
    while todo:
        for other in links.get(todo.pop(), ()):
            if other in retired and other not in tied and other != change.lesson_id:
                tied.add(other)
                if _status(first_pending_before[other]) != LessonStatus.ACTIVE:
                    todo.append(other)  # undoing it retires it too: what it replaced comes back as well
    return [c for c in changes if c.lesson_id in tied and c.reverted_by_id is None]


def _revert_changes(*, batch: ChangeBatch, changes: list[Change], actor: Actor, reason: str, label: str) -> ChangeBatch:
    """Undo `changes` (all of one batch, none reverted yet) as one new batch.

    Per lesson the state before its first undone change comes back; refused when a lesson was
    changed since. When nothing of the batch is left standing, the batch counts as reverted and
    `batch_reverted` tells the features that follow it (candidates, proposals, runs).
    """
    first_before: dict[int, Any] = {}
    last_after: dict[int, Any] = {}
    for c in changes:
        first_before.setdefault(c.lesson_id, c.before)
        last_after[c.lesson_id] = c.after
    lessons = {
        lesson.pk: lesson
        for lesson in Lesson.objects.select_for_update().filter(pk__in=last_after).prefetch_related("refs")
    }
    for lesson_id, after in last_after.items():
        _check_revertible(lessons[lesson_id], after)
    revert_batch = batch_create(
        memory=batch.memory, kind=ChangeBatch.Kind.REVERT, actor=actor, reason=reason, label=label
    )
    revert_changes: dict[int, Change] = {}
    for lesson_id, before in first_before.items():
        lesson = lessons[lesson_id]
        target = before if before is not None else {**last_after[lesson_id], "status": LessonStatus.DELETED}
        prior = lesson_snapshot(lesson)
        apply_snapshot(lesson, target)
        revert_changes[lesson_id] = record_change(
            revert_batch, lesson, Change.Action.REVERT, prior, lesson_snapshot(lesson)
        )
    for c in changes:
        c.reverted_by = revert_changes[c.lesson_id]
    Change.objects.bulk_update(changes, ["reverted_by"])
    memory_bump_version(batch.memory)
    if not batch.changes.filter(reverted_by__isnull=True).exists():
        batch.reverted_by = revert_batch
        batch.save(update_fields=["reverted_by"])
        batch_reverted.send(sender=ChangeBatch, batch=batch, revert_batch=revert_batch)
    return revert_batch


@transaction.atomic
def change_revert(*, change: Change, actor: Actor, reason: str = "") -> Change:
    """Undo one change, together with the changes of its batch that depend on it (see dependent_changes).

    Returns the revert Change of this change's lesson.
    """
    change = Change.objects.select_for_update().select_related("lesson", "memory").get(pk=change.pk)
    if change.reverted_by_id:
        raise RevertError("This change was already reverted.")
    batch = ChangeBatch.objects.select_for_update().select_related("memory").get(pk=change.batch_id)
    _require_role_to_revert(batch, actor)
    change.batch = batch
    tied = dependent_changes(change)
    label = f"Revert of change #{change.pk} ({change.get_action_display().lower()})"
    if tied:
        label += f" with the {len(tied)} change{pluralize(len(tied))} of {batch} tied to it"
    changes = sorted([change, *tied], key=lambda c: c.pk)
    revert_batch = _revert_changes(batch=batch, changes=changes, actor=actor, reason=reason, label=label)
    return revert_batch.changes.get(lesson_id=change.lesson_id)


def batch_revertible(batch: ChangeBatch) -> bool:
    """Whether batch_revert would go through now (something left to undo, nothing changed since)."""
    if batch.reverted_by_id:
        return False
    last_after: dict[int, Any] = {}
    for c in batch.changes.filter(reverted_by__isnull=True).order_by("id"):
        last_after[c.lesson_id] = c.after
    lessons = Lesson.objects.filter(pk__in=last_after).prefetch_related("refs")
    return bool(last_after) and all(lesson_snapshot(lesson) == last_after[lesson.pk] for lesson in lessons)


@transaction.atomic
def batch_revert(*, batch: ChangeBatch, actor: Actor, reason: str = "") -> ChangeBatch:
    """Undo everything one action did that is still standing, as one new batch.

    Works after some of its changes were reverted one by one: those stay as they are. Refused when
    a lesson was changed again since (the later change must go first).
    """
    batch = ChangeBatch.objects.select_for_update().select_related("memory").get(pk=batch.pk)
    _require_role_to_revert(batch, actor)
    if batch.reverted_by_id:
        raise RevertError("This batch was already reverted.")
    changes = list(batch.changes.filter(reverted_by__isnull=True).order_by("id"))
    if not changes:
        if batch.changes.exists():
            raise RevertError("Every change of this batch was already reverted.")
        raise RevertError("This batch changed no lessons; there is nothing to revert.")
    label = f"Revert of {batch.get_kind_display().lower()} #{batch.pk}" + (f": {batch.label}" if batch.label else "")
    return _revert_changes(batch=batch, changes=changes, actor=actor, reason=reason, label=label)
