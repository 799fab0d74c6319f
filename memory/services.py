"""Every write to memory goes through here, so every write leaves history and bumps the version."""

from dataclasses import dataclass
from datetime import date

import django.dispatch
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from memory.models import (
    ALL_CATEGORIES,
    CORE_CATEGORIES,
    ActorType,
    Change,
    ChangeBatch,
    Lesson,
    LessonConfirmation,
    LessonRef,
    LessonStatus,
    Memory,
    Relevance,
    Tier,
    content_hash,
)
from django.conf import settings

from memory.refs import Ref, parse_ref_list
from memory.textcheck import check_text, text_problem

# The cap on one lesson's text (LESSON_MAX_CHARS), as read at start; checks read the setting itself.
MAX_LESSON_CHARS = settings.LESSON_MAX_CHARS

# Sent after a batch has been reverted, so features that own state outside lessons
# (promotion candidates, compaction proposals, refinement runs) can follow.
batch_reverted = django.dispatch.Signal()


@dataclass(frozen=True)
class Actor:
    type: str
    user: object = None
    label: str = ""

    @classmethod
    def for_user(cls, user):
        return cls(ActorType.USER, user=user, label=user.get_username())

    @classmethod
    def agent(cls, token):
        return cls(ActorType.AGENT, label=f"agent token {token.prefix}")

    @classmethod
    def job(cls, label):
        return cls(ActorType.JOB, label=label)

    @classmethod
    def system(cls, label="system"):
        return cls(ActorType.SYSTEM, label=label)


# --- snapshots -------------------------------------------------------------------------------

def lesson_snapshot(lesson, refs=None):
    """The state of a lesson that history records and revert restores."""
    if refs is None:
        refs = list(lesson.refs.all())
    return {
        "tier": lesson.tier,
        "category": lesson.category,
        "text": lesson.text,
        "relevance": lesson.relevance,
        "protected": lesson.protected,
        "status": lesson.status,
        "lesson_date": lesson.lesson_date.isoformat(),
        "refs": [r.as_text() for r in refs],
    }


def _apply_snapshot(lesson, snap):
    lesson.tier = snap["tier"]
    lesson.category = snap["category"]
    lesson.text = snap["text"]
    lesson.relevance = snap["relevance"]
    lesson.protected = snap["protected"]
    lesson.status = snap["status"]
    lesson.lesson_date = date.fromisoformat(snap["lesson_date"])
    lesson.save()
    _replace_refs(lesson, parse_ref_list("\n".join(snap["refs"])))


def _replace_refs(lesson, refs):
    lesson.refs.all().delete()
    LessonRef.objects.bulk_create(
        LessonRef(lesson=lesson, path=r.path, start_line=r.start_line, end_line=r.end_line, position=i)
        for i, r in enumerate(refs)
    )


# --- validation ------------------------------------------------------------------------------

def clean_refs(refs):
    """Refs given as text, Ref objects or a mix, parsed and validated (an error names the refs field)."""
    if refs is None:
        return []
    if isinstance(refs, str):
        try:
            return parse_ref_list(refs)
        except ValidationError as exc:
            raise ValidationError({"refs": exc.messages}) from None
    cleaned = []
    for ref in refs:
        if isinstance(ref, Ref):
            cleaned.append(ref)
        else:
            try:
                cleaned.extend(parse_ref_list(str(ref)))
            except ValidationError as exc:
                raise ValidationError({"refs": exc.messages}) from None
    return cleaned


def validate_lesson_fields(*, tier, category, text, relevance):
    errors = {}
    if tier not in (Tier.CORE, Tier.WORKING):
        errors["tier"] = f"tier must be core or working, not {tier!r}"
    allowed = CORE_CATEGORIES if tier == Tier.CORE else ALL_CATEGORIES
    if category not in allowed:
        errors["category"] = f"category for {tier} lessons must be one of {', '.join(allowed)}, not {category!r}"
    problem = text_problem(text.strip() if isinstance(text, str) else text, max_chars=settings.LESSON_MAX_CHARS)
    if not text or not text.strip():
        errors["text"] = "lesson text must not be empty"
    elif problem:
        errors["text"] = f"lesson text {problem}"
    if relevance not in Relevance.values:
        errors["relevance"] = f"relevance must be one of {', '.join(Relevance.values)}, not {relevance!r}"
    if errors:
        raise ValidationError(errors)


REASON_MAX_CHARS = 4000


# --- batches and versions --------------------------------------------------------------------

def batch_create(*, memory, kind, actor, label="", reason=""):
    reason = check_text(reason or "", field="reason", multiline=True, max_chars=REASON_MAX_CHARS)
    return ChangeBatch.objects.create(
        memory=memory,
        kind=kind,
        label=label[:300],
        reason=reason,
        actor_type=actor.type,
        actor_user=actor.user,
        actor_label=actor.label[:200],
    )


def memory_bump_version(memory):
    Memory.objects.filter(pk=memory.pk).update(version=F("version") + 1)
    memory.refresh_from_db(fields=["version"])
    return memory.version


def memory_get_or_create(*, persona, project):
    memory, _ = Memory.objects.get_or_create(persona=persona, project=project)
    return memory


def _record(batch, lesson, action, before, after):
    return Change.objects.create(
        batch=batch, memory_id=lesson.memory_id, lesson=lesson, action=action, before=before, after=after
    )


# --- lesson writes ---------------------------------------------------------------------------

@transaction.atomic
def lesson_create(
    *,
    memory,
    text,
    category,
    actor,
    tier=Tier.WORKING,
    refs=None,
    relevance=Relevance.MEDIUM,
    protected=False,
    lesson_date=None,
    section=None,
    batch=None,
    reason="",
    interaction=None,
    derived_from=(),
    source_entry_ids=(),
    observed_at=None,
    vague=False,
    bump=True,
):
    text = (text or "").strip()
    validate_lesson_fields(tier=tier, category=category, text=text, relevance=relevance)
    refs = clean_refs(refs)
    if batch is None:
        batch = batch_create(memory=memory, kind=ChangeBatch.Kind.MANUAL, actor=actor, reason=reason)
    if section is None:
        section = next_section(memory)
    lesson = Lesson.objects.create(
        memory=memory,
        tier=tier,
        category=category,
        text=text,
        relevance=relevance,
        protected=protected,
        lesson_date=lesson_date or timezone.localdate(),
        section=section,
        interaction=interaction,
        source_entry_ids=list(source_entry_ids),
        observed_at=observed_at,
        vague=vague,
        content_hash=content_hash(text),
    )
    _replace_refs(lesson, refs)
    if derived_from:
        lesson.derived_from.set(derived_from)
    _record(batch, lesson, Change.Action.CREATE, None, lesson_snapshot(lesson, refs))
    if bump:
        memory_bump_version(memory)
    return lesson


def next_section(memory):
    last = Lesson.objects.filter(memory=memory).order_by("-section").values_list("section", flat=True).first()
    return (last or 0) + 1


def _mutate(lesson, *, actor, reason, action, batch, change_fn, kind=ChangeBatch.Kind.MANUAL, bump=True):
    """Lock the lesson, apply change_fn, record before/after, bump the memory version."""
    lesson = Lesson.objects.select_for_update().get(pk=lesson.pk)
    before = lesson_snapshot(lesson)
    change_fn(lesson)
    after = lesson_snapshot(lesson)
    if before == after:
        return lesson, None
    if batch is None:
        batch = batch_create(memory=lesson.memory, kind=kind, actor=actor, reason=reason)
    change = _record(batch, lesson, action, before, after)
    if bump:
        memory_bump_version(lesson.memory)
    return lesson, change


@transaction.atomic
def lesson_update(*, lesson, actor, reason="", batch=None, text=None, category=None, refs=None, relevance=None,
                  lesson_date=None):
    def apply(obj):
        new_text = obj.text if text is None else text.strip()
        new_category = obj.category if category is None else category
        new_relevance = obj.relevance if relevance is None else relevance
        validate_lesson_fields(tier=obj.tier, category=new_category, text=new_text, relevance=new_relevance)
        new_refs = None if refs is None else clean_refs(refs)
        obj.text, obj.category, obj.relevance = new_text, new_category, new_relevance
        if lesson_date is not None:
            obj.lesson_date = lesson_date
        obj.unparsed = False
        obj.save()
        if new_refs is not None:
            _replace_refs(obj, new_refs)

    lesson, _ = _mutate(lesson, actor=actor, reason=reason, action=Change.Action.UPDATE, batch=batch, change_fn=apply)
    return lesson


def _set_status(status, *, allowed_from):
    def apply(obj):
        if obj.status not in allowed_from:
            raise ValidationError(f"lesson {obj.pk} is {obj.status}; cannot change it to {status}")
        obj.status = status
        obj.save()

    return apply


@transaction.atomic
def lesson_delete(*, lesson, actor, reason="", batch=None, bump=True):
    """Soft delete: the lesson leaves compiled memory but stays restorable. Protected lessons refuse.

    bump=False is for callers that delete many lessons in one batch and bump the version once at the end.
    """
    if Lesson.objects.filter(pk=lesson.pk, protected=True).exists():
        raise PermissionDenied("this lesson is protected; unprotect it before deleting")
    lesson, _ = _mutate(
        lesson, actor=actor, reason=reason, action=Change.Action.DELETE, batch=batch, bump=bump,
        change_fn=_set_status(LessonStatus.DELETED, allowed_from=(LessonStatus.ACTIVE,)),
    )
    return lesson


@transaction.atomic
def lesson_restore(*, lesson, actor, reason="", batch=None):
    lesson, _ = _mutate(
        lesson, actor=actor, reason=reason, action=Change.Action.RESTORE, batch=batch,
        change_fn=_set_status(LessonStatus.ACTIVE, allowed_from=(LessonStatus.DELETED, LessonStatus.SUPERSEDED)),
    )
    return lesson


@transaction.atomic
def lesson_promote(*, lesson, actor, reason="", batch=None):
    """An active working lesson now lives on in a core lesson: it leaves compiled memory, kept in history."""
    lesson, _ = _mutate(
        lesson, actor=actor, reason=reason, action=Change.Action.PROMOTE, batch=batch,
        change_fn=_set_status(LessonStatus.PROMOTED, allowed_from=(LessonStatus.ACTIVE,)),
    )
    return lesson


@transaction.atomic
def lesson_supersede(*, lesson, superseded_by, actor, reason="", batch=None, bump=True):
    """An active lesson is replaced by another lesson of the same memory (a merge or a rewrite).

    It leaves compiled memory, points at its successor and stays in history; revert makes it active again.
    bump=False is for callers that retire many lessons in one batch and bump the version once at the end.
    """
    if superseded_by is None or superseded_by.pk is None:
        raise ValidationError("a lesson can only be superseded by a saved lesson")
    if superseded_by.pk == lesson.pk:
        raise ValidationError(f"lesson {lesson.pk} cannot supersede itself")
    if superseded_by.memory_id != lesson.memory_id:
        raise ValidationError("a lesson can only be superseded by a lesson of the same memory")

    def apply(obj):
        if obj.status != LessonStatus.ACTIVE:
            raise ValidationError(f"lesson {obj.pk} is {obj.status}; only an active lesson can be superseded")
        obj.status = LessonStatus.SUPERSEDED
        obj.superseded_by = superseded_by
        obj.save()

    lesson, _ = _mutate(lesson, actor=actor, reason=reason, action=Change.Action.SUPERSEDE, batch=batch,
                        change_fn=apply, bump=bump)
    return lesson


@transaction.atomic
def lesson_set_protected(*, lesson, protected, actor, reason="", batch=None):
    def apply(obj):
        obj.protected = protected
        obj.save()

    action = Change.Action.PROTECT if protected else Change.Action.UNPROTECT
    lesson, _ = _mutate(lesson, actor=actor, reason=reason, action=action, batch=batch, change_fn=apply)
    return lesson


@transaction.atomic
def lesson_confirm(*, lesson, interaction=None, confirmed_on=None):
    """The same lesson was learned again: count the confirmation, store nothing twice."""
    return LessonConfirmation.objects.create(
        lesson=lesson, interaction=interaction, confirmed_on=confirmed_on or timezone.localdate()
    )


# --- revert ----------------------------------------------------------------------------------

class RevertError(Exception):
    """A revert that would corrupt memory; the message says why, for the person who asked."""


# Batches only an approver can make; undoing one (or redoing it by reverting its revert) is the
# same decision, so it needs the same role.
APPROVER_BATCH_KINDS = (ChangeBatch.Kind.PROMOTION, ChangeBatch.Kind.COMPACTION, ChangeBatch.Kind.REFINEMENT,
                        ChangeBatch.Kind.PIPELINE)


def batch_decided_by_approver(batch, _depth=0):
    """True when the batch is an approver's kind, or a revert (of a revert…) of one."""
    if batch.kind in APPROVER_BATCH_KINDS:
        return True
    if batch.kind != ChangeBatch.Kind.REVERT or _depth > 20:
        return False
    originals = ChangeBatch.objects.filter(changes__reverted_by__batch=batch).distinct()
    return any(batch_decided_by_approver(original, _depth + 1) for original in originals)


def _require_role_to_revert(batch, actor):
    from memory.roles import APPROVE

    if actor.type == ActorType.USER and batch_decided_by_approver(batch) and not (
        actor.user is not None and actor.user.has_perm(APPROVE)
    ):
        raise PermissionDenied(
            f"Reverting {batch.get_kind_display().lower()} #{batch.pk} needs the approver role: "
            "an approver's decision is undone by an approver."
        )


def _check_revertible(lesson, expected_after):
    current = lesson_snapshot(lesson)
    if current != expected_after:
        raise RevertError(
            f"Lesson {lesson.pk} was changed again after this; revert the later change first "
            "(see the lesson's history)."
        )


@transaction.atomic
def change_revert(*, change, actor, reason=""):
    change = Change.objects.select_for_update().select_related("lesson", "memory", "batch").get(pk=change.pk)
    _require_role_to_revert(change.batch, actor)
    if change.reverted_by_id:
        raise RevertError("This change was already reverted.")
    lesson = Lesson.objects.select_for_update().get(pk=change.lesson_id)
    _check_revertible(lesson, change.after)
    target = change.before if change.before is not None else {**change.after, "status": LessonStatus.DELETED}
    batch = batch_create(
        memory=change.memory, kind=ChangeBatch.Kind.REVERT, actor=actor, reason=reason,
        label=f"Revert of change #{change.pk} ({change.get_action_display().lower()})",
    )
    before = lesson_snapshot(lesson)
    _apply_snapshot(lesson, target)
    revert = _record(batch, lesson, Change.Action.REVERT, before, lesson_snapshot(lesson))
    change.reverted_by = revert
    change.save(update_fields=["reverted_by"])
    memory_bump_version(change.memory)
    return revert


@transaction.atomic
def batch_revert(*, batch, actor, reason=""):
    """Undo everything one action did, as one new batch; refused when later changes depend on it."""
    batch = ChangeBatch.objects.select_for_update().select_related("memory").get(pk=batch.pk)
    _require_role_to_revert(batch, actor)
    if batch.reverted_by_id:
        raise RevertError("This batch was already reverted.")
    changes = list(batch.changes.order_by("id"))
    if not changes:
        raise RevertError("This batch changed no lessons; there is nothing to revert.")
    if any(c.reverted_by_id for c in changes):
        raise RevertError("Part of this batch was already reverted change by change; revert the rest one by one.")
    first_before, last_after = {}, {}
    for c in changes:
        first_before.setdefault(c.lesson_id, c.before)
        last_after[c.lesson_id] = c.after
    lessons = {l.pk: l for l in Lesson.objects.select_for_update().filter(pk__in=last_after).prefetch_related("refs")}
    for lesson_id, after in last_after.items():
        _check_revertible(lessons[lesson_id], after)
    revert_batch = batch_create(
        memory=batch.memory, kind=ChangeBatch.Kind.REVERT, actor=actor, reason=reason,
        label=f"Revert of {batch.get_kind_display().lower()} #{batch.pk}" + (f": {batch.label}" if batch.label else ""),
    )
    revert_changes = {}
    for lesson_id, before in first_before.items():
        lesson = lessons[lesson_id]
        target = before if before is not None else {**last_after[lesson_id], "status": LessonStatus.DELETED}
        prior = lesson_snapshot(lesson)
        _apply_snapshot(lesson, target)
        revert_changes[lesson_id] = _record(revert_batch, lesson, Change.Action.REVERT, prior, lesson_snapshot(lesson))
    for c in changes:
        c.reverted_by = revert_changes[c.lesson_id]
    Change.objects.bulk_update(changes, ["reverted_by"])
    batch.reverted_by = revert_batch
    batch.save(update_fields=["reverted_by"])
    memory_bump_version(batch.memory)
    batch_reverted.send(sender=ChangeBatch, batch=batch, revert_batch=revert_batch)
    return revert_batch
