"""Writes of code-reference checking: linking refs to their anchors, anchoring and checking them
against the project's checkout, and the human decisions on what the check found.

Anchoring never fails a lesson write: without a checkout (or with a broken one) the refs stay
unanchored until a check can read the code.
"""

import logging
from typing import Any

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import connection, transaction
from django.db.models import Exists, OuterRef
from django.urls import reverse
from django.utils import timezone

from memory import services
from memory.jobs import enqueue_on_commit
from memory.models import ChangeBatch, Lesson, LessonRef, LessonStatus, RefAnchor, RefCheck
from memory.refs.checker import Anchor, check_anchors
from memory.refs.git import CheckoutUnavailable, Repository, has_checkout_configured
from memory.refs.models import NEEDS_REVIEW, RefStatus
from memory.refs.parsing import Ref
from memory.signals import review_event
from personas.models import Project

log = logging.getLogger(__name__)

_CHUNK = 500


def _ref_key(path, start, end):
    return Ref(path, start, None if end == start else end).as_text()


def _new_anchor(lesson_id, path, start, end):
    end = None if end == start else end
    return RefAnchor(lesson_id=lesson_id, key=_ref_key(path, start, end), path=path, start_line=start, end_line=end)


# --- linking refs to anchors (part of every lesson write) -------------------------------------


def refs_link_anchors(lesson, rows, *, new=False):
    """Point each unsaved LessonRef row at its lesson's anchor for that ref, creating missing ones.

    A ref the lesson had before (kept through an edit, or brought back by a revert) finds its old
    anchor again, with the status and proposal the last check gave it. `new`: the lesson was just
    created, so it has no anchors to look up.
    """
    keys = [row.as_text() for row in rows]
    existing = {} if new else dict(RefAnchor.objects.filter(lesson_id=lesson.pk, key__in=keys).values_list("key", "id"))
    missing: dict[str, RefAnchor] = {}
    for row in rows:
        if row.as_text() not in existing:
            missing.setdefault(row.as_text(), _new_anchor(lesson.pk, row.path, row.start_line, row.end_line))
    if missing:
        for anchor in RefAnchor.objects.bulk_create(missing.values()):
            existing[anchor.key] = anchor.pk
        schedule_anchoring(lesson.memory_id)
    for row in rows:
        row.anchor_id = existing[row.as_text()]


def schedule_anchoring(memory_id, project=None):
    """After the write commits, anchor the memory's new refs, when its project (read unless given) has a checkout."""
    if project is None:
        project = Project.objects.filter(memories__id=memory_id).only("slug", "checkout_path").first()
    if project is None or not has_checkout_configured(project):
        return
    enqueue_on_commit("memory.refs.anchor", memory_id, robust=True)


def _link_unlinked(refs):
    """Anchors for refs written without one (bulk imports): one pass, a few queries."""
    rows = list(refs.filter(anchor__isnull=True).values_list("id", "lesson_id", "path", "start_line", "end_line"))
    if not rows:
        return 0
    wanted: dict[tuple[int, str], tuple[str, int | None, int | None]] = {}
    for _, lesson_id, path, start, end in rows:
        wanted.setdefault((lesson_id, _ref_key(path, start, end)), (path, start, end))
    lesson_ids = sorted({lesson_id for lesson_id, _ in wanted})
    existing = _anchor_ids(lesson_ids)
    missing = [
        _new_anchor(lesson_id, *wanted[(lesson_id, key)])
        for lesson_id, key in wanted
        if (lesson_id, key) not in existing
    ]
    if missing:
        services.ref_anchors_create(anchors=missing)
        existing = _anchor_ids(lesson_ids)
    services.lesson_refs_set_anchors(
        [(existing[(lesson_id, _ref_key(path, start, end))], pk) for pk, lesson_id, path, start, end in rows]
    )
    return len(rows)


def _anchor_ids(lesson_ids):
    found = {}
    for i in range(0, len(lesson_ids), _CHUNK):
        for lesson_id, key, pk in RefAnchor.objects.filter(lesson_id__in=lesson_ids[i : i + _CHUNK]).values_list(
            "lesson_id", "key", "id"
        ):
            found[(lesson_id, key)] = pk
    return found


# --- anchoring and checking ------------------------------------------------------------------

_FINGERPRINT = ("fingerprint", "first_line", "context_before", "context_after")
_ANCHOR_FIELDS = (
    "id",
    "path",
    "start_line",
    "end_line",
    "status",
    "commit",
    "fingerprint",
    "first_line",
    "context_before",
    "context_after",
    "lesson__memory_id",
)


def _as_anchor(row):
    return Anchor(
        id=row["id"],
        path=row["path"],
        start=row["start_line"],
        end=row["end_line"],
        commit=row["commit"],
        fingerprint=row["fingerprint"],
        first_line=row["first_line"],
        context_before=row["context_before"],
        context_after=row["context_after"],
    )


def _save_outcomes(rows, outcomes, head):
    """Write each anchor's new status; bump the version of memories whose compiled text changes.

    Refs still valid (the common case) are written with one UPDATE per chunk, the rest one by one
    in bulk. Returns {status: count}.
    """
    now = timezone.now()
    stamp = connection.ops.adapt_datetimefield_value(now)  # for the raw UPDATE below
    still_valid, changed, touched = [], [], set()
    counts: dict[str, int] = {}
    newly_waiting: dict[int, int] = {}  # memory id: refs that began to need a person's look
    for row in rows:
        outcome = outcomes[row["id"]]
        counts[outcome.status] = counts.get(outcome.status, 0) + 1
        if (row["status"] in NEEDS_REVIEW) != (outcome.status in NEEDS_REVIEW):
            touched.add(row["lesson__memory_id"])
            if outcome.status in NEEDS_REVIEW:
                newly_waiting[row["lesson__memory_id"]] = newly_waiting.get(row["lesson__memory_id"], 0) + 1
        if outcome.status == RefStatus.VALID and not outcome.fingerprint and row["status"] == RefStatus.VALID:
            still_valid.append(row["id"])
            continue
        path, start, end = outcome.proposed or ("", None, None)
        changed.append(
            (
                outcome.status,
                outcome.commit,
                head,
                stamp,
                path if path != row["path"] else "",
                start,
                end,
                outcome.note[:300],
                *(outcome.fingerprint.get(name, row[name]) for name in _FINGERPRINT),
                row["id"],
            )
        )
    for i in range(0, len(still_valid), _CHUNK):
        RefAnchor.objects.filter(pk__in=still_valid[i : i + _CHUNK]).update(
            commit=head, checked_commit=head, checked_at=now
        )
    services.ref_anchors_update(
        columns=[
            "status",
            "commit",
            "checked_commit",
            "checked_at",
            "proposed_path",
            "proposed_start",
            "proposed_end",
            "note",
            *_FINGERPRINT,
        ],
        rows=changed,
    )
    if touched:
        # Compiled memory marks stale refs: the memories' versions go up and their caches go.
        services.memories_bump_version(touched)
    for memory_id, n in newly_waiting.items():
        review_event.send(
            sender=RefAnchor,
            event_type="review.waiting",
            memory_id=memory_id,
            data={
                "count": n,
                "items": [
                    {
                        "kind": "refs to review",
                        "id": memory_id,
                        "count": n,
                        "url": reverse("memory_detail", args=[memory_id]) + "?refs=review",
                    }
                ],
            },
        )
    return counts


def _run(repo, head, anchor_rows):
    outcomes = check_anchors(repo, head, [_as_anchor(row) for row in anchor_rows])
    with transaction.atomic():
        return _save_outcomes(anchor_rows, outcomes, head)


def _anchors_in_use(**scope):
    """Anchors of the current refs of active lessons in scope, after giving every such ref one."""
    with transaction.atomic():
        _link_unlinked(LessonRef.objects.filter(lesson__status=LessonStatus.ACTIVE, **scope))
    return RefAnchor.objects.filter(lesson__status=LessonStatus.ACTIVE, **scope).filter(
        Exists(LessonRef.objects.filter(anchor_id=OuterRef("pk")))
    )


def refs_anchor_pending(*, memory):
    """Anchor the memory's refs that no check has seen yet (run after a write commits).

    Returns how many were looked at; 0 when the checkout cannot be read (the next check retries).
    """
    rows = list(_anchors_in_use(lesson__memory=memory).filter(status=RefStatus.UNANCHORED).values(*_ANCHOR_FIELDS))
    if not rows:
        return 0  # another write of the same transaction got there first
    try:
        repo = Repository.for_project(memory.project)
        _run(repo, repo.head(memory.project.repository_ref), rows)
    except CheckoutUnavailable as exc:
        log.info("refs of memory %s left unanchored: %s", memory.pk, exc)
        return 0
    return len(rows)


def refs_check_project(*, project):
    """Check every ref of every active lesson of the project at the head of its branch.

    Records the run (head, counts or the error) as a RefCheck and returns it.
    """
    check = RefCheck.objects.create(project=project)
    try:
        repo = Repository.for_project(project)
        check.head = repo.head(project.repository_ref)
        rows = list(_anchors_in_use(lesson__memory__project=project).values(*_ANCHOR_FIELDS))
        check.counts = _run(repo, check.head, rows)
        check.refs_checked = len(rows)
    except CheckoutUnavailable as exc:
        check.error = str(exc)
    check.finished_at = timezone.now()
    check.save()
    return check


# --- human decisions -------------------------------------------------------------------------


def _proposed_ref(anchor):
    start, end = anchor.proposed_start, anchor.proposed_end
    return Ref(anchor.proposed_path or anchor.path, start, None if end == start else end)


def _anchor_accepted(lesson, anchor, new):
    """The accepted range is what the check verified: anchor it there without reading git again."""
    fields = {
        "path": new.path,
        "start_line": new.start_line,
        "end_line": new.end_line,
        "status": RefStatus.VALID,
        "commit": anchor.checked_commit,
        "checked_commit": anchor.checked_commit,
        "checked_at": anchor.checked_at,
        "fingerprint": anchor.fingerprint,
        "first_line": anchor.first_line,
        "context_before": anchor.context_before,
        "context_after": anchor.context_after,
        "proposed_path": "",
        "proposed_start": None,
        "proposed_end": None,
        "note": "",
    }
    RefAnchor.objects.update_or_create(lesson=lesson, key=new.as_text(), defaults=fields)


def _current_refs(lesson):
    return list(lesson.refs.select_related("anchor").order_by("position", "id"))


def _accept_moves(lesson, moved_ids, *, actor, reason, batch):
    refs, accepted = [], []
    for row in _current_refs(lesson):
        if row.pk in moved_ids and row.anchor and row.anchor.status == RefStatus.MOVED:
            new = _proposed_ref(row.anchor)
            _anchor_accepted(lesson, row.anchor, new)
            refs.append(new)
            accepted.append(f"{row.as_text()} → {new.as_text()}")
        else:
            refs.append(Ref(row.path, row.start_line, row.end_line))
    if not accepted:
        raise ValidationError("this ref has no proposed move to accept; check the refs again")
    services.lesson_update(
        lesson=lesson,
        actor=actor,
        batch=batch,
        refs=refs,
        reason=reason or "Accepted moved code reference: " + "; ".join(accepted),
    )
    return len(accepted)


def _locked_ref(ref):
    return LessonRef.objects.select_related("anchor", "lesson").get(pk=ref.pk)


@transaction.atomic
def ref_accept_move(*, ref, actor, reason="", batch=None):
    """Point the ref at the range the check found its lines at: a recorded, revertible lesson edit."""
    ref = _locked_ref(ref)
    Lesson.objects.select_for_update().filter(pk=ref.lesson_id).first()
    _accept_moves(ref.lesson, {ref.pk}, actor=actor, reason=reason, batch=batch)
    return ref.lesson


@transaction.atomic
def refs_accept_moved(*, memory, actor, reason=""):
    """Accept every proposed move of the memory's active lessons as one batch (revertible as one)."""
    moved = list(
        LessonRef.objects.filter(
            lesson__memory=memory, lesson__status=LessonStatus.ACTIVE, anchor__status=RefStatus.MOVED
        ).values_list("lesson_id", "id")
    )
    if not moved:
        raise ValidationError("no moved refs wait for review in this memory")
    by_lesson: dict[int, set[int]] = {}
    for lesson_id, ref_id in moved:
        by_lesson.setdefault(lesson_id, set()).add(ref_id)
    batch = services.batch_create(
        memory=memory,
        kind=ChangeBatch.Kind.MANUAL,
        actor=actor,
        reason=reason,
        label=f"Accepted {len(moved)} moved code reference{'s' if len(moved) != 1 else ''}",
    )
    for lesson in Lesson.objects.select_for_update().filter(pk__in=by_lesson).order_by("id"):
        _accept_moves(lesson, by_lesson[lesson.pk], actor=actor, reason=reason, batch=batch)
    return batch


@transaction.atomic
def ref_drop(*, ref, actor, reason=""):
    """Remove one ref from its lesson (recorded and revertible like any edit)."""
    ref = _locked_ref(ref)
    keep = [Ref(r.path, r.start_line, r.end_line) for r in _current_refs(ref.lesson) if r.pk != ref.pk]
    services.lesson_update(
        lesson=ref.lesson,
        actor=actor,
        refs=keep,
        reason=reason or f"Dropped code reference {ref.as_text()} ({_status_words(ref)})",
    )
    return ref.lesson


@transaction.atomic
def ref_retire_lesson(*, ref, actor, reason=""):
    """The code the lesson was about is gone or rewritten: retire the lesson (a soft delete, restorable)."""
    ref = _locked_ref(ref)
    return services.lesson_delete(
        lesson=ref.lesson,
        actor=actor,
        reason=reason or f"Retired: code reference {ref.as_text()} is {_status_words(ref)}",
    )


REF_BULK_ACTIONS = {"drop": "Drop the refs", "retire": "Retire their lessons"}


def refs_bulk_decide(*, memory, ref_ids, action, actor, reason=""):
    """Drop the selected refs (action "drop") or retire the lessons they belong to ("retire").

    Each lesson is edited in its own transaction, as its own change, so any one can be reverted
    alone; a lesson whose refs changed since they were selected (someone edited it, or a check
    moved them) or that is no longer active is reported and left as it is, and the rest go.
    Returns {"done": [ref ids], "refused": [{"id", "message"}]}. An unknown action or an empty
    selection raises ValidationError and changes nothing."""
    if action not in REF_BULK_ACTIONS:
        raise ValidationError("Choose to drop the refs or to retire their lessons.")
    ids = list(dict.fromkeys(int(i) for i in ref_ids))
    if not ids:
        raise ValidationError("Select at least one ref.")
    by_lesson: dict[int, list[int]] = {}
    found = dict(LessonRef.objects.filter(pk__in=ids, lesson__memory=memory).values_list("id", "lesson_id"))
    outcome: dict[str, list[Any]] = {"done": [], "refused": []}
    for pk in ids:
        if pk in found:
            by_lesson.setdefault(found[pk], []).append(pk)
        else:
            outcome["refused"].append(
                {"id": pk, "message": "This ref is no longer there: its lesson was edited meanwhile. Review it again."}
            )
    for lesson_id, selected in by_lesson.items():
        try:
            _bulk_one_lesson(lesson_id, selected, action=action, actor=actor, reason=reason)
        except (ValidationError, PermissionDenied) as exc:
            message = " ".join(getattr(exc, "messages", None) or [str(exc)])
            outcome["refused"].extend({"id": pk, "message": message} for pk in selected)
        else:
            outcome["done"].extend(selected)
    return outcome


@transaction.atomic
def _bulk_one_lesson(lesson_id, selected, *, action, actor, reason):
    from memory import services

    lesson = Lesson.objects.select_for_update().get(pk=lesson_id)
    if lesson.status != LessonStatus.ACTIVE:
        raise ValidationError(f"Its lesson #{lesson.pk} is {lesson.get_status_display().lower()} already.")
    current = _current_refs(lesson)
    if not set(selected) <= {r.pk for r in current}:
        raise ValidationError(f"The refs of lesson #{lesson.pk} changed meanwhile. Review it again.")
    chosen = [r for r in current if r.pk in selected]
    words = ", ".join(f"{r.as_text()} ({_status_words(r)})" for r in chosen)
    if action == "drop":
        keep = [Ref(r.path, r.start_line, r.end_line) for r in current if r.pk not in selected]
        services.lesson_update(
            lesson=lesson,
            actor=actor,
            refs=keep,
            reason=reason or f"Dropped code reference{'s' if len(chosen) > 1 else ''} {words}",
        )
    else:
        services.lesson_delete(lesson=lesson, actor=actor, reason=reason or f"Retired: code reference {words}")


def _status_words(ref):
    if ref.anchor is None:
        return "not checked"
    return ref.anchor.get_status_display().lower()
