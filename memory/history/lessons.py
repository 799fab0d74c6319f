"""Writes of one lesson at a time: create, edit, retire, protect, confirm, and an agent's append.

Each records its change (before and after, lesson_snapshot) in a batch and, unless the caller
batches several writes and bumps once itself (bump=False), bumps the memory's version.
"""

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.utils import timezone

from memory.history.batches import Actor, batch_create, memory_bump_version, record_change
from memory.history.snapshots import lesson_snapshot, replace_refs
from memory.history.validation import clean_refs, validate_lesson_fields
from memory.models import (
    ActorType,
    Change,
    ChangeBatch,
    Lesson,
    LessonConfirmation,
    LessonStatus,
    Memory,
    Relevance,
    Tier,
    content_hash,
)
from memory.signals import working_lessons_added
from memory.textcheck import check_text


@transaction.atomic
def lesson_create(
    *,
    memory: Memory,
    text: str,
    category: str,
    actor: Actor,
    tier: str = Tier.WORKING,
    refs: Any = None,
    relevance: str = Relevance.MEDIUM,
    protected: bool = False,
    lesson_date: date | None = None,
    section: int | None = None,
    batch: ChangeBatch | None = None,
    reason: str = "",
    interaction: Any = None,
    derived_from: Iterable[Lesson] = (),
    source_entry_ids: Iterable[str] = (),
    observed_at: datetime | None = None,
    vague: bool = False,
    expires_on: date | None = None,
    expires_when: str = "",
    bump: bool = True,
) -> Lesson:
    text = (text or "").strip()
    validate_lesson_fields(tier=tier, category=category, text=text, relevance=relevance)
    expires_when = _checked_expiry(tier=tier, expires_on=expires_on, expires_when=expires_when, actor=actor)
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
        expires_on=expires_on,
        expires_when=expires_when,
        content_hash=content_hash(text),
    )
    replace_refs(lesson, refs, new=True)
    if derived_from:
        lesson.derived_from.set(derived_from)
    record_change(batch, lesson, Change.Action.CREATE, None, lesson_snapshot(lesson, refs))
    if bump:
        memory_bump_version(memory)
    return lesson


@transaction.atomic
def lesson_create_from_file(
    *, memory: Memory, line: Any, batch: ChangeBatch, section: int, today: date | None = None
) -> Lesson:
    """A lesson for one line read from a memory file (a ParsedLine), in `batch`; the version is not bumped.

    Unlike lesson_create, the line keeps what the file said: an unparsed line its raw text, a line
    without a date stays undated, a section its header as read, so writing it back gives the line again.
    """
    if line.rejected:
        raise ValidationError(f"{line.where}: {line.problem}")
    if not line.unparsed:
        validate_lesson_fields(tier=line.tier, category=line.category, text=line.text, relevance=Relevance.MEDIUM)
    heading = line.heading if len(line.heading) <= (Lesson._meta.get_field("section_heading").max_length or 0) else ""
    lesson = Lesson.objects.create(
        memory=memory,
        tier=line.tier,
        category=line.category,
        text=line.text,
        lesson_date=line.lesson_date or today or timezone.localdate(),
        undated=line.lesson_date is None,
        section=section,
        section_heading=heading,
        unparsed=line.unparsed,
        raw_line=line.raw_line if line.unparsed else "",
        content_hash=content_hash(line.text),
    )
    refs = list(line.refs)
    replace_refs(lesson, refs, new=True)
    record_change(batch, lesson, Change.Action.CREATE, None, lesson_snapshot(lesson, refs))
    return lesson


def next_section(memory: Memory) -> int:
    last = Lesson.objects.filter(memory=memory).order_by("-section").values_list("section", flat=True).first()
    return (last or 0) + 1


def _mutate(
    lesson: Lesson,
    *,
    actor: Actor,
    reason: str,
    action: str,
    batch: ChangeBatch | None,
    change_fn: Callable[[Lesson], None],
    kind: str = ChangeBatch.Kind.MANUAL,
    bump: bool = True,
) -> tuple[Lesson, Change | None]:
    """Lock the lesson, apply change_fn, record before/after, bump the memory version."""
    lesson = Lesson.objects.select_for_update().get(pk=lesson.pk)
    before = lesson_snapshot(lesson)
    change_fn(lesson)
    after = lesson_snapshot(lesson)
    if before == after:
        return lesson, None
    if batch is None:
        batch = batch_create(memory=lesson.memory, kind=kind, actor=actor, reason=reason)
    change = record_change(batch, lesson, action, before, after)
    if bump:
        memory_bump_version(lesson.memory)
    return lesson, change


@transaction.atomic
def lesson_update(
    *,
    lesson: Lesson,
    actor: Actor,
    reason: str = "",
    batch: ChangeBatch | None = None,
    text: str | None = None,
    category: str | None = None,
    refs: Any = None,
    relevance: str | None = None,
    lesson_date: date | None = None,
) -> Lesson:
    def apply(obj: Lesson) -> None:
        new_text = obj.text if text is None else text.strip()
        new_category = obj.category if category is None else category
        new_relevance = obj.relevance if relevance is None else relevance
        validate_lesson_fields(tier=obj.tier, category=new_category, text=new_text, relevance=new_relevance)
        new_refs = None if refs is None else clean_refs(refs)
        obj.text, obj.category, obj.relevance = new_text, new_category, new_relevance
        if lesson_date is not None and (lesson_date != obj.lesson_date or obj.undated):
            # A date set by hand is the lesson's date now: written as a new section of its own.
            obj.lesson_date, obj.undated, obj.section_heading = lesson_date, False, ""
        obj.unparsed = False
        obj.save()
        if new_refs is not None:
            replace_refs(obj, new_refs)

    lesson, _ = _mutate(lesson, actor=actor, reason=reason, action=Change.Action.UPDATE, batch=batch, change_fn=apply)
    return lesson


def _set_status(status: str, *, allowed_from: Sequence[str]) -> Callable[[Lesson], None]:
    def apply(obj: Lesson) -> None:
        if obj.status not in allowed_from:
            raise ValidationError(f"lesson {obj.pk} is {obj.status}; cannot change it to {status}")
        obj.status = status
        obj.save()

    return apply


@transaction.atomic
def lesson_delete(
    *, lesson: Lesson, actor: Actor, reason: str = "", batch: ChangeBatch | None = None, bump: bool = True
) -> Lesson:
    """Soft delete: the lesson leaves compiled memory but stays restorable. Protected lessons refuse.

    bump=False is for callers that delete many lessons in one batch and bump the version once at the end.
    """
    if Lesson.objects.filter(pk=lesson.pk, protected=True).exists():
        raise PermissionDenied("this lesson is protected; unprotect it before deleting")
    lesson, _ = _mutate(
        lesson,
        actor=actor,
        reason=reason,
        action=Change.Action.DELETE,
        batch=batch,
        bump=bump,
        change_fn=_set_status(LessonStatus.DELETED, allowed_from=(LessonStatus.ACTIVE,)),
    )
    return lesson


@transaction.atomic
def lesson_restore(*, lesson: Lesson, actor: Actor, reason: str = "", batch: ChangeBatch | None = None) -> Lesson:
    lesson, _ = _mutate(
        lesson,
        actor=actor,
        reason=reason,
        action=Change.Action.RESTORE,
        batch=batch,
        change_fn=_set_status(LessonStatus.ACTIVE, allowed_from=(LessonStatus.DELETED, LessonStatus.SUPERSEDED)),
    )
    return lesson


@transaction.atomic
def lesson_promote(*, lesson: Lesson, actor: Actor, reason: str = "", batch: ChangeBatch | None = None) -> Lesson:
    """An active working lesson now lives on in a core lesson: it leaves compiled memory, kept in history."""
    lesson, _ = _mutate(
        lesson,
        actor=actor,
        reason=reason,
        action=Change.Action.PROMOTE,
        batch=batch,
        change_fn=_set_status(LessonStatus.PROMOTED, allowed_from=(LessonStatus.ACTIVE,)),
    )
    return lesson


@transaction.atomic
def lesson_supersede(
    *,
    lesson: Lesson,
    superseded_by: Lesson,
    actor: Actor,
    reason: str = "",
    batch: ChangeBatch | None = None,
    bump: bool = True,
) -> Lesson:
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

    def apply(obj: Lesson) -> None:
        if obj.status != LessonStatus.ACTIVE:
            raise ValidationError(f"lesson {obj.pk} is {obj.status}; only an active lesson can be superseded")
        obj.status = LessonStatus.SUPERSEDED
        obj.superseded_by = superseded_by
        obj.save()

    lesson, _ = _mutate(
        lesson, actor=actor, reason=reason, action=Change.Action.SUPERSEDE, batch=batch, change_fn=apply, bump=bump
    )
    return lesson


@transaction.atomic
def lesson_set_protected(
    *, lesson: Lesson, protected: bool, actor: Actor, reason: str = "", batch: ChangeBatch | None = None
) -> Lesson:
    def apply(obj: Lesson) -> None:
        obj.protected = protected
        obj.save()

    action = Change.Action.PROTECT if protected else Change.Action.UNPROTECT
    lesson, _ = _mutate(lesson, actor=actor, reason=reason, action=action, batch=batch, change_fn=apply)
    return lesson


EXPIRES_WHEN_MAX_CHARS = 300


def _checked_expiry(*, tier: str, expires_on: Any, expires_when: str, actor: Actor) -> str:
    """expires_when cleaned, or an error: a date that is not one, an unreadable condition, or an
    agent or job dating a core lesson (core lessons expire only by a person's decision)."""
    expires_when = check_text((expires_when or "").strip(), field="expires_when", max_chars=EXPIRES_WHEN_MAX_CHARS)
    if expires_on is not None and (not isinstance(expires_on, date) or isinstance(expires_on, datetime)):
        raise ValidationError({"expires_on": ["expires on must be a date (YYYY-MM-DD)"]})
    if (expires_on is not None or expires_when) and tier == Tier.CORE and actor.type != ActorType.USER:
        raise PermissionDenied("a core lesson expires only by a person's decision")
    return expires_when


@transaction.atomic
def lesson_set_expiry(
    *,
    lesson: Lesson,
    expires_on: date | None,
    expires_when: str = "",
    actor: Actor,
    reason: str = "",
    batch: ChangeBatch | None = None,
    bump: bool = True,
) -> Lesson:
    """Give a live lesson the day it stops holding (expires_on) and/or the event it holds until
    (expires_when), or clear both (None, ""): a lesson past its day is compiled no more, and
    clearing restores it. A change like any edit: recorded, and undone by reverting its batch.

    A core lesson is permanent until a person decides otherwise: only a person may date it.
    """

    def apply(obj: Lesson) -> None:
        if obj.status != LessonStatus.ACTIVE:
            raise ValidationError(f"lesson {obj.pk} is {obj.status}; only a live lesson can expire")
        obj.expires_on = expires_on
        obj.expires_when = _checked_expiry(tier=obj.tier, expires_on=expires_on, expires_when=expires_when, actor=actor)
        obj.save(update_fields=["expires_on", "expires_when"])

    lesson, _ = _mutate(
        lesson, actor=actor, reason=reason, action=Change.Action.UPDATE, batch=batch, change_fn=apply, bump=bump
    )
    return lesson


@transaction.atomic
def lesson_confirm(*, lesson: Lesson, interaction: Any = None, confirmed_on: date | None = None) -> LessonConfirmation:
    """The same lesson was learned again: count the confirmation, store nothing twice."""
    return LessonConfirmation.objects.create(
        lesson=lesson, interaction=interaction, confirmed_on=confirmed_on or timezone.localdate()
    )


def lesson_add_sources(*, lesson: Lesson, sources: Iterable[Lesson]) -> None:
    """More lessons back `lesson` (a reflection merged with new observations): its derived-from links grow.

    A link is no change of the lesson's recorded state, so it leaves no history of its own; the
    caller's batch records the lessons it changed.
    """
    lesson.derived_from.add(*sources)


def lessons_forget_successor(*, batch: ChangeBatch) -> None:
    """The lessons `batch` changed that are active again point at no successor (after its revert)."""
    Lesson.objects.filter(pk__in=batch.changes.values("lesson_id"), status=LessonStatus.ACTIVE).update(
        superseded_by=None
    )


def lessons_point_at_successor(*, lesson: Lesson) -> None:
    """The lessons `lesson` was made from that are superseded by nothing point at it again (a
    compaction applied again by reverting its revert)."""
    Lesson.objects.filter(
        pk__in=[s.pk for s in lesson.derived_from.all()], status=LessonStatus.SUPERSEDED, superseded_by__isnull=True
    ).update(superseded_by=lesson)


@dataclass(frozen=True)
class LessonDraft:
    """A working lesson an agent or a reflection wants stored (validated by the caller)."""

    text: str
    category: str
    refs: Any = ()
    relevance: str = Relevance.MEDIUM
    vague: bool = False
    expires_on: date | None = None
    expires_when: str = ""


def lessons_append_or_confirm(
    *,
    memory: Memory,
    drafts: Iterable[LessonDraft],
    actor: Actor,
    kind: str,
    label: str,
    reason: str | Callable[[int], str],
    interaction: Any = None,
    sender: Any = Lesson,
) -> list[tuple[Lesson, str]]:
    """Each draft confirms the active lesson of the same text in the memory, or becomes a new working
    lesson; the new ones go in one batch (made at the first of them) under one new section.

    Call inside a transaction holding the memory's row lock, so two writers cannot both add the same
    lesson. `reason` is text or a function of the position of the first new draft. A draft repeating
    an earlier one of the same call counts as that one, confirmed once. When lessons were added, the
    version is bumped once and `working_lessons_added` is sent (by `sender`) after the commit.
    A confirmation leaves the confirmed lesson as it is, its expiry included (a draft's expiry
    dates only the lesson it creates).
    Returns [(lesson, "created" | "confirmed")], one per draft.
    """
    batch = section = None
    results: list[tuple[Lesson, str]] = []
    created_ids: list[int] = []
    seen: dict[str, Lesson] = {}
    for position, draft in enumerate(drafts):
        digest = content_hash(draft.text)
        if digest in seen:
            results.append((seen[digest], "confirmed"))
            continue
        existing = (
            Lesson.objects.filter(memory=memory, status=LessonStatus.ACTIVE, content_hash=digest).order_by("id").first()
        )
        if existing:
            lesson_confirm(lesson=existing, interaction=interaction)
            seen[digest] = existing
            results.append((existing, "confirmed"))
            continue
        if batch is None:
            batch = batch_create(
                memory=memory,
                kind=kind,
                actor=actor,
                label=label,
                reason=reason(position) if callable(reason) else reason,
            )
            section = next_section(memory)
        lesson = lesson_create(
            memory=memory,
            text=draft.text,
            category=draft.category,
            tier=Tier.WORKING,
            refs=draft.refs,
            relevance=draft.relevance,
            actor=actor,
            batch=batch,
            section=section,
            interaction=interaction,
            vague=draft.vague,
            expires_on=draft.expires_on,
            expires_when=draft.expires_when,
            bump=False,
        )
        seen[digest] = lesson
        created_ids.append(lesson.pk)
        results.append((lesson, "created"))
    if created_ids:
        memory_bump_version(memory)
        memory_id = memory.pk
        transaction.on_commit(
            lambda: working_lessons_added.send(sender=sender, memory_id=memory_id, lesson_ids=list(created_ids))
        )
    return results
