"""Writes of the compaction feature: propose, edit a line, reject, apply, revert, recompute.

Lesson rows change only in `compaction_apply` (and in revert, through `batch_revert`), with history
recorded per lesson in one ChangeBatch so the whole compaction reverts as one unit. Every compaction
proposal, the observation pipeline's pruning included, is stored by `compaction_store_draft`.

A proposal covers the working lessons it read; it is stale only when one of those changed (see
`memory.compaction.staleness`). Lessons appended while it waits stay as they are on apply, after the
compacted lines in working.md, so the file keeps its date order.
"""

import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, cast

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Max, Prefetch
from django.urls import reverse
from django.utils import timezone

from memory import services
from memory.compaction.draft import (
    KEPT,
    Draft,
    draft_from_rows,
    input_lessons,
    parse_edited_line,
    validate,
)
from memory.compaction.llm import compact_with_model
from memory.compaction.offline import compact_offline
from memory.compaction.selectors import compaction_needed, working_lessons
from memory.compaction.staleness import covered_changes, fingerprints, stale_reason
from memory.engines.base import Engine, EngineError
from memory.engines.registry import engine_config, get_engine
from memory.formats.lines import render_working
from memory.models import (
    Change,
    ChangeBatch,
    CompactionProposal,
    Lesson,
    LessonConfirmation,
    LessonRef,
    Memory,
    ProposalDrop,
    ProposalLine,
    Relevance,
    Tier,
)
from memory.selectors import with_refs
from memory.signals import review_event
from memory.textcheck import check_text

if TYPE_CHECKING:
    from django.contrib.auth.models import User

log = logging.getLogger(__name__)


class CompactionError(Exception):
    """A compaction action that cannot go ahead; the message is for the person who asked."""


class StaleProposal(CompactionError):
    """A lesson the proposal covers changed since it was computed; the message says which, how and by whom."""


def _person(actor: services.Actor) -> "User | None":
    """The user behind an action (None for a job or an agent)."""
    return cast("User | None", actor.user)  # Actor.user is declared as a plain object


def _compute_draft(memory: Memory, lessons: list[Lesson], engine: Engine | None) -> tuple[Draft, str, str]:
    """(draft, engine name, model name). An engine failure becomes an error on the draft, never an exception."""
    target = memory.compaction_target_lines
    if engine is None:
        if engine_config(memory.persona).provider == "offline":
            return compact_offline(lessons, target), "offline", ""
        try:
            engine = get_engine(memory.persona, memory=memory)
        except EngineError as exc:
            return (
                Draft(errors=[f"The compaction engine is not available: {exc}"], engine_failed=True),
                engine_config(memory.persona).provider,
                "",
            )
    try:
        draft, completion = compact_with_model(engine, memory, lessons, target)
    except EngineError as exc:
        return Draft(errors=[f"The {engine.provider} engine failed: {exc}"], engine_failed=True), engine.provider, ""
    return draft, engine.provider, completion.model


def compaction_propose(
    *,
    memory: Memory,
    actor: services.Actor,
    trigger: str = CompactionProposal.Trigger.MANUAL,
    trigger_detail: str = "",
    engine: Engine | None = None,
    recomputed_from: CompactionProposal | None = None,
) -> CompactionProposal:
    """Compute, validate and store a proposal for `memory`. Memory itself is not touched.

    The model call happens outside any transaction; the lessons read first are the ones the proposal
    covers (with their fingerprints), so an edit of one during the call makes the proposal stale
    rather than wrong, and a lesson appended during the call lies outside it.
    """
    memory = Memory.objects.select_related("persona", "project").get(pk=memory.pk)
    if CompactionProposal.objects.filter(memory=memory, status=CompactionProposal.Status.PENDING).exists():
        raise CompactionError("A compaction proposal for this memory is already waiting for review.")
    base_version = memory.version
    lessons = working_lessons(memory)
    if not lessons:
        raise CompactionError("Working memory is empty; there is nothing to compact.")
    draft, engine_name, model_name = _compute_draft(memory, lessons, engine)
    return compaction_store_draft(
        memory=memory,
        lessons=lessons,
        draft=draft,
        base_version=base_version,
        actor=actor,
        engine=engine_name,
        model_name=model_name,
        trigger=trigger,
        trigger_detail=trigger_detail,
        target_lines=max(memory.compaction_target_lines, sum(1 for lesson in lessons if lesson.is_must_keep)),
        recomputed_from=recomputed_from,
    )


def compaction_store_draft(
    *,
    memory: Memory,
    lessons: list[Lesson],
    draft: Draft,
    base_version: int,
    actor: services.Actor,
    engine: str,
    model_name: str = "",
    trigger: str = CompactionProposal.Trigger.MANUAL,
    trigger_detail: str = "",
    target_lines: int,
    recomputed_from: CompactionProposal | None = None,
) -> CompactionProposal:
    """Validate `draft` against the working lessons it covers and store it as a proposal (pending or invalid).

    The one way a compaction proposal is written, whoever computed the draft (the compactor here,
    the observation pipeline's pruner). `lessons` are the covered lessons as read, refs prefetched.
    """
    errors = validate(draft, input_lessons(lessons), target_lines)
    try:
        with transaction.atomic():
            proposal = CompactionProposal.objects.create(
                memory=memory,
                base_version=base_version,
                engine=str(engine or "")[:20],
                model_name=str(model_name or "")[:100],
                status=CompactionProposal.Status.INVALID if errors else CompactionProposal.Status.PENDING,
                trigger=trigger,
                trigger_detail=trigger_detail[:300],
                validation_errors=errors,
                raw_output=draft.raw_output,
                input_lesson_ids=[lesson.pk for lesson in lessons],
                input_fingerprints=fingerprints(lessons),
                target_lines=target_lines,
                before_text=render_working(with_refs(lessons)),
                created_by=_person(actor),
                recomputed_from=recomputed_from,
            )
            _store_draft(proposal, draft)
            if proposal.status == CompactionProposal.Status.PENDING:
                _review_event("review.waiting", [proposal])
    except IntegrityError:
        raise CompactionError("Another compaction proposal for this memory became pending meanwhile.") from None
    return proposal


def _store_draft(proposal: CompactionProposal, draft: Draft) -> None:
    ProposalLine.objects.bulk_create(
        ProposalLine(
            proposal=proposal,
            position=i,
            category=line.category[:20],
            text=line.text,
            refs=line.refs,
            source_ids=line.source_ids,
            kind=line.kind or "rewritten",
            edited=line.edited,
        )
        for i, line in enumerate(draft.lines, start=1)
    )
    ProposalDrop.objects.bulk_create(
        ProposalDrop(
            proposal=proposal, lesson_id=d.lesson_id, reason=d.reason[:500], had_refs=d.had_refs, listed=d.listed
        )
        for d in draft.drops
    )


def compaction_check(*, memory_id: int) -> CompactionProposal | None:
    """Propose a compaction when working memory is over its limits and nothing is pending. Returns the proposal."""
    memory = Memory.objects.select_related("persona", "project").filter(pk=memory_id).first()
    if memory is None:
        return None
    if CompactionProposal.objects.filter(memory=memory, status=CompactionProposal.Status.PENDING).exists():
        return None
    detail = compaction_needed(memory)
    if not detail:
        return None
    try:
        return compaction_propose(
            memory=memory,
            actor=services.Actor.job("compaction check"),
            trigger=CompactionProposal.Trigger.THRESHOLD,
            trigger_detail=detail,
        )
    except CompactionError as exc:
        log.info("compaction check for memory %s: %s", memory_id, exc)
        return None


def _input_rows(proposal: CompactionProposal) -> list[Lesson]:
    return list(Lesson.objects.filter(pk__in=proposal.input_lesson_ids).prefetch_related("refs").order_by("id"))


def _lock_pending(proposal: CompactionProposal) -> CompactionProposal:
    proposal = CompactionProposal.objects.select_for_update().get(pk=proposal.pk)
    if proposal.status != CompactionProposal.Status.PENDING:
        raise CompactionError(
            f"This proposal is {proposal.get_status_display().lower()}; only a pending proposal can be changed."
        )
    return proposal


@transaction.atomic
def compaction_line_update(
    *, line: ProposalLine, actor: services.Actor, category: str, text: str, refs: str
) -> ProposalLine:
    """Edit one proposed line before applying. The whole proposal is re-validated; a failing edit changes nothing."""
    proposal = _lock_pending(line.proposal)
    category, text, refs = parse_edited_line(category=category, text=text, refs=refs)
    line = ProposalLine.objects.select_for_update().get(pk=line.pk, proposal=proposal)
    draft = draft_from_rows(proposal)
    edited = draft.lines[[draft_line.origin for draft_line in draft.lines].index(f"Line {line.position}")]
    edited.category, edited.text, edited.refs, edited.edited = category, text, refs, True
    errors = validate(draft, input_lessons(_input_rows(proposal)), proposal.target_lines)
    if errors:
        raise ValidationError(errors)
    line.category, line.text, line.refs, line.edited, line.kind = category, text, refs, True, edited.kind
    line.save()
    # Kinds of other lines and the unlisted drops depend on the whole draft; store them as validated.
    for row, checked in zip(proposal.lines.order_by("position"), draft.lines):
        if row.kind != checked.kind:
            row.kind = checked.kind
            row.save(update_fields=["kind"])
    return line


def _review_event(
    event_type: str,
    proposals: list[CompactionProposal],
    *,
    decision: str | None = None,
    actor: services.Actor | None = None,
) -> None:
    """The event a team hears: a proposal waits, or proposals (of one memory or several) were decided."""
    memory_ids = {p.memory_id for p in proposals}
    data = {
        "count": len(proposals),
        "items": [
            {"kind": "compaction", "id": p.pk, "url": reverse("compaction-detail", args=[p.pk])} for p in proposals
        ],
    }
    if decision and actor is not None:
        data.update(decision=decision, by=actor.label)
    # One memory: the team is read when the event is sent. Several (a bulk decision, one team's).
    one_memory = len(memory_ids) == 1
    review_event.send(
        sender=CompactionProposal,
        event_type=event_type,
        memory_id=proposals[0].memory_id if one_memory else None,
        team_id=None if one_memory else proposals[0].memory.project.team_id,
        data=data,
    )


@transaction.atomic
def compaction_reject(
    *, proposal: CompactionProposal, actor: services.Actor, reason: str | None, announce: bool = True
) -> CompactionProposal:
    reason = (reason or "").strip()
    if not reason:
        raise ValidationError("Say why the proposal is rejected.")
    reason = check_text(reason, field="reason", multiline=True, max_chars=services.REASON_MAX_CHARS)
    proposal = CompactionProposal.objects.select_for_update().get(pk=proposal.pk)
    if proposal.status not in (CompactionProposal.Status.PENDING, CompactionProposal.Status.INVALID):
        raise CompactionError(f"This proposal is {proposal.get_status_display().lower()}; it cannot be rejected.")
    proposal.status = CompactionProposal.Status.REJECTED
    proposal.reason = reason
    proposal.decided_by = _person(actor)
    proposal.decided_at = timezone.now()
    proposal.save()
    if announce:
        _review_event("review.decided", [proposal], decision="rejected", actor=actor)
    return proposal


def compaction_bulk_reject(
    *, proposal_ids: Iterable[int | str], actor: services.Actor, reason: str | None
) -> dict[str, list[Any]]:
    """Reject several proposals with one reason, each through compaction_reject in its own
    transaction: one that someone applied, rejected or that went stale meanwhile is reported and the
    rest are rejected. Returns {"rejected": [ids], "refused": [{"id", "message"}]}. No proposal or
    no reason raises ValidationError and changes nothing."""
    ids = list(dict.fromkeys(int(i) for i in proposal_ids))
    if not ids:
        raise ValidationError("Select at least one proposal.")
    reason = (reason or "").strip()
    if not reason:
        raise ValidationError("Say why the proposals are rejected.")
    check_text(reason, field="reason", multiline=True, max_chars=services.REASON_MAX_CHARS)
    found = {p.pk: p for p in CompactionProposal.objects.filter(pk__in=ids).select_related("memory__project")}
    outcome: dict[str, list[Any]] = {"rejected": [], "refused": []}
    for pk in ids:
        if pk not in found:
            outcome["refused"].append({"id": pk, "message": f"Proposal #{pk} does not exist."})
            continue
        try:
            compaction_reject(proposal=found[pk], actor=actor, reason=reason, announce=False)
        except CompactionError as exc:
            now = CompactionProposal.objects.select_related("decided_by").get(pk=pk)
            who = f" by {now.decided_by.get_username()}" if now.decided_by is not None else ""
            outcome["refused"].append(
                {
                    "id": pk,
                    "message": f"Already {now.get_status_display().lower()}{who}." if now.decided_at else str(exc),
                }
            )
        else:
            outcome["rejected"].append(pk)
    rejected = [found[pk] for pk in outcome["rejected"]]
    by_team: dict[int | None, list[CompactionProposal]] = {}
    for proposal in rejected:
        by_team.setdefault(proposal.memory.project.team_id, []).append(proposal)
    with transaction.atomic():
        for proposals in by_team.values():  # one event per team: an endpoint never sees another team's items
            _review_event("review.decided", proposals, decision="rejected", actor=actor)
    return outcome


def compaction_apply(*, proposal: CompactionProposal, actor: services.Actor) -> ChangeBatch:
    """Apply a pending, valid proposal in one transaction. Returns the ChangeBatch.

    Only the covered lessons are rewritten; lessons appended since the proposal are not touched.
    Raises StaleProposal (and marks the proposal stale, saying why) when a covered lesson changed;
    raises CompactionError when the proposal is not applicable.
    """
    with transaction.atomic():
        proposal = _lock_pending(proposal)
        # Covered lessons first, then the memory: the order every lesson write takes (lock the lesson,
        # then bump the memory), so an edit racing the apply waits instead of deadlocking. The memory
        # lock waits out appends and confirmations in flight (they hold it for their whole transaction).
        # NO KEY: a confirmation row inserted by such an append only key-shares its lesson.
        lessons = {
            lesson.pk: lesson
            for lesson in Lesson.objects.select_for_update(no_key=True)
            .filter(pk__in=proposal.input_lesson_ids)
            .order_by("id")
            # to_attr: plain lists; a related manager per lesson costs more than the query.
            .prefetch_related(
                Prefetch("refs", queryset=LessonRef.objects.order_by("position", "id"), to_attr="ref_list")
            )
        }
        memory = Memory.objects.select_for_update().get(pk=proposal.memory_id)
        changes = covered_changes(proposal, memory, lessons)
        if changes:
            proposal.status = CompactionProposal.Status.STALE
            proposal.reason = stale_reason(changes)
            proposal.decided_at = timezone.now()
            proposal.save(update_fields=["status", "reason", "decided_at"])
        else:
            batch = _apply_locked(proposal, memory, lessons, actor)
            _review_event("review.decided", [proposal], decision="applied", actor=actor)
    if changes:
        raise StaleProposal(f"{proposal.reason} Recompute the proposal from the memory as it is now.")
    return batch


def _apply_locked(
    proposal: CompactionProposal, memory: Memory, lessons: dict[int, Any], actor: services.Actor
) -> ChangeBatch:
    rows = list(proposal.lines.order_by("position"))
    drops = list(proposal.drops.all())
    draft = draft_from_rows(proposal, rows, drops)
    errors = validate(draft, input_lessons([lessons[i] for i in sorted(lessons)]), proposal.target_lines)
    if errors:
        raise CompactionError("This proposal does not pass validation: " + " ".join(errors))

    now = timezone.now()
    batch = services.batch_create(
        memory=memory,
        kind=ChangeBatch.Kind.COMPACTION,
        actor=actor,
        label=f"Compaction proposal #{proposal.pk}: {len(lessons)} → {len(rows)} lessons",
        reason=f"Applied compaction proposal #{proposal.pk} ({proposal.engine}).",
    )
    created = _new_lessons(rows, lessons, batch, memory)
    # Set-based writes: a 150-lesson apply is a handful of statements, not a few per lesson.
    new_ids = services.lessons_bulk_create([new for new, _ in created], now=now)
    replaced_by: dict[int, int] = {}
    for new_id, (_, sources) in zip(new_ids, created):
        for source in sources:
            replaced_by.setdefault(source.pk, new_id)
    # Lessons leave working memory as history records them (never a hard delete), in the one batch.
    services.lessons_bulk_retire(
        batch=batch,
        now=now,
        retired=[
            (lessons[lesson_id], lessons[lesson_id].ref_list, successor_id)
            for lesson_id, successor_id in [*replaced_by.items(), *((d.lesson_id, None) for d in drops)]
        ],
    )
    # A confirmation (the same text seen again) counts for the lesson that now holds that text.
    LessonConfirmation.objects.bulk_create(
        [
            LessonConfirmation(
                lesson_id=replaced_by[c.lesson_id],
                confirmed_on=c.confirmed_on,
                interaction_id=c.interaction_id,
                created_at=c.created_at,
            )
            for c in LessonConfirmation.objects.filter(lesson_id__in=replaced_by).order_by("id")
        ]
    )

    memory.last_compacted_at = now
    memory.save(update_fields=["last_compacted_at"])
    services.memory_bump_version(memory)
    proposal.status = CompactionProposal.Status.APPLIED
    proposal.decided_by = _person(actor)
    proposal.decided_at = now
    proposal.apply_batch = batch
    proposal.save(update_fields=["status", "decided_by", "decided_at", "apply_batch"])
    return batch


def _new_lessons(
    rows: list[ProposalLine], lessons: dict[int, Any], batch: ChangeBatch, memory: Memory
) -> list[tuple[services.NewLesson, list[Lesson]]]:
    """The lessons the proposal's rewritten and merged lines become, each with its sources, in proposal order."""
    # Working memory is read in id order; the new lines sort by section, right after the lessons the
    # proposal keeps and before any lesson appended since (those took later sections).
    section = max(lesson.section for lesson in lessons.values())
    created: list[tuple[services.NewLesson, list[Lesson]]] = []
    for row in rows:
        if row.kind == KEPT:
            continue
        sources = [lessons[i] for i in dict.fromkeys(row.source_ids)]
        created.append(
            (
                services.NewLesson(
                    batch_id=batch.pk,
                    memory_id=memory.pk,
                    tier=Tier.WORKING,
                    category=row.category,
                    text=row.text.strip(),
                    lesson_date=max(s.lesson_date for s in sources),
                    section=section,
                    refs=services.clean_refs(row.refs),
                    relevance=Relevance.highest(s.relevance for s in sources),
                    protected=any(s.protected for s in sources),
                    derived_from=[s.pk for s in sources],
                ),
                sources,
            )
        )
    return created


@transaction.atomic
def compaction_mark_stale(*, proposal: CompactionProposal) -> CompactionProposal:
    """Retire a proposal before recomputing it: refused unless something it covers really changed."""
    proposal = CompactionProposal.objects.select_for_update().get(pk=proposal.pk)
    if proposal.status == CompactionProposal.Status.STALE:
        return proposal
    if proposal.status != CompactionProposal.Status.PENDING:
        raise CompactionError(
            f"This proposal is {proposal.get_status_display().lower()}; only a stale proposal is recomputed."
        )
    changes = covered_changes(proposal, Memory.objects.get(pk=proposal.memory_id))
    if not changes:
        raise CompactionError("Nothing this proposal covers has changed; it can still be applied as it is.")
    proposal.status = CompactionProposal.Status.STALE
    proposal.reason = stale_reason(changes)
    proposal.decided_at = timezone.now()
    proposal.save(update_fields=["status", "reason", "decided_at"])
    return proposal


@transaction.atomic
def compaction_revert(*, proposal: CompactionProposal, actor: services.Actor, reason: str = "") -> ChangeBatch:
    """Undo an applied compaction through the history (batch_revert); the receiver marks it reverted."""
    proposal = CompactionProposal.objects.select_for_update().get(pk=proposal.pk)
    if proposal.status != CompactionProposal.Status.APPLIED or proposal.apply_batch is None:
        raise CompactionError("Only an applied compaction can be reverted.")
    return services.batch_revert(
        batch=proposal.apply_batch, actor=actor, reason=reason or f"Revert of compaction proposal #{proposal.pk}"
    )


def compaction_propose_requested(*, memory_id: int, user_id: int, recomputed_from_id: int | None = None) -> int | None:
    """A proposal a person asked for (or a recompute of a stale one), run as a job: its id, or None
    when it cannot be made (the page shows why from the memory's state)."""
    user = get_user_model().objects.get(pk=user_id)
    old = CompactionProposal.objects.filter(pk=recomputed_from_id).first() if recomputed_from_id else None
    try:
        return compaction_propose(
            memory=Memory.objects.get(pk=memory_id),
            actor=services.Actor.for_user(user),
            recomputed_from=old,
            trigger_detail=f"Recomputed from proposal #{old.pk}, which went stale" if old else "",
        ).pk
    except CompactionError:
        return None


def compaction_follow_revert(*, batch: ChangeBatch, revert_batch: ChangeBatch) -> None:
    """A batch was reverted (from this page or from the history): keep proposals and links in step.

    Reverting a compaction marks its proposal reverted; reverting that revert applies the
    compaction again, and the re-applying batch becomes the one a later revert undoes.
    """
    proposal = CompactionProposal.objects.filter(apply_batch=batch).first()
    if proposal is not None:
        # The restored lessons are active again; they are no longer replaced by anything.
        services.lessons_forget_successor(batch=batch)
        CompactionProposal.objects.filter(pk=proposal.pk).update(
            status=CompactionProposal.Status.REVERTED,
            reason=f"{revert_batch} by {revert_batch.actor_display} on {revert_batch.created_at:%Y-%m-%d %H:%M}.",
        )
        _refresh_last_compacted(proposal.memory_id)
        return
    if batch.kind != ChangeBatch.Kind.REVERT:
        return
    original = ChangeBatch.objects.filter(reverted_by=batch).first()
    if original is None:
        return
    proposal = CompactionProposal.objects.filter(apply_batch=original).first()
    if proposal is None or proposal.status != CompactionProposal.Status.REVERTED:
        return
    created = (
        Lesson.objects.filter(
            pk__in=original.changes.filter(action=Change.Action.CREATE).values_list("lesson_id", flat=True)
        )
        .prefetch_related("derived_from")
        .order_by("id")
    )
    for new in created:
        services.lessons_point_at_successor(lesson=new)
    CompactionProposal.objects.filter(pk=proposal.pk).update(
        status=CompactionProposal.Status.APPLIED,
        apply_batch=revert_batch,
        reason=f"Applied again by {revert_batch.actor_display} ({revert_batch}, undoing {batch}).",
    )
    _refresh_last_compacted(proposal.memory_id)


def _refresh_last_compacted(memory_id: int) -> None:
    """ "Compacted <date>" is the latest compaction still in force: a revert takes its date back."""
    latest = CompactionProposal.objects.filter(memory_id=memory_id, status=CompactionProposal.Status.APPLIED).aggregate(
        at=Max("apply_batch__created_at")
    )["at"]
    Memory.objects.filter(pk=memory_id).update(last_compacted_at=latest)
