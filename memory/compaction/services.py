"""Writes of the compaction feature: propose, edit a line, reject, apply, revert.

Lesson rows change only in `compaction_apply` (and in revert, through `batch_revert`), with history
recorded per lesson in one ChangeBatch so the whole compaction reverts as one unit.
"""

import logging

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from memory import services
from memory.compaction.draft import (
    KEPT,
    Draft,
    DraftDrop,
    DraftLine,
    input_lessons,
    parse_edited_line,
    validate,
)
from memory.compaction.llm import compact_with_model
from memory.compaction.offline import compact_offline
from memory.engines.base import EngineError
from memory.engines.registry import engine_config, get_engine
from memory.formats.lines import render_working
from memory.models import (
    Change,
    ChangeBatch,
    CompactionProposal,
    Lesson,
    LessonStatus,
    Memory,
    ProposalDrop,
    ProposalLine,
    Relevance,
    Tier,
)
from memory.selectors import active_lessons, with_refs
from memory.textcheck import check_text

log = logging.getLogger(__name__)

STALE_MESSAGE = "memory changed since this proposal — regenerate"


class CompactionError(Exception):
    """A compaction action that cannot go ahead; the message is for the person who asked."""


class StaleProposal(CompactionError):
    def __init__(self):
        super().__init__(STALE_MESSAGE)


def working_lessons(memory):
    return active_lessons(memory, Tier.WORKING)


def compaction_needed(memory, lessons=None):
    """Why working memory needs compacting ('' when it does not): over its line limit or its char budget."""
    lessons = working_lessons(memory) if lessons is None else lessons
    if len(lessons) > memory.max_working_lines:
        return f"{len(lessons)} working lessons, over the limit of {memory.max_working_lines}"
    chars = len(render_working(with_refs(lessons)))
    if chars > memory.working_char_budget:
        return f"working.md is {chars} characters, over the budget of {memory.working_char_budget}"
    return ""


def _compute_draft(memory, lessons, engine):
    """(draft, engine name, model name). An engine failure becomes an error on the draft, never an exception."""
    target = memory.compaction_target_lines
    if engine is None:
        if engine_config(memory.persona).provider == "offline":
            return compact_offline(lessons, target), "offline", ""
        try:
            engine = get_engine(memory.persona, memory=memory)
        except EngineError as exc:
            return Draft(errors=[f"The compaction engine is not available: {exc}"], engine_failed=True), \
                engine_config(memory.persona).provider, ""
    try:
        draft, completion = compact_with_model(engine, memory, lessons, target)
    except EngineError as exc:
        return Draft(errors=[f"The {engine.provider} engine failed: {exc}"], engine_failed=True), engine.provider, ""
    return draft, engine.provider, completion.model


def compaction_propose(*, memory, actor, trigger=CompactionProposal.Trigger.MANUAL, trigger_detail="", engine=None):
    """Compute, validate and store a proposal for `memory`. Memory itself is not touched.

    The model call happens outside any transaction; the version read first is the one the proposal
    claims, so a write during the call makes the proposal stale rather than wrong.
    """
    memory = Memory.objects.select_related("persona", "project").get(pk=memory.pk)
    if CompactionProposal.objects.filter(memory=memory, status=CompactionProposal.Status.PENDING).exists():
        raise CompactionError("A compaction proposal for this memory is already waiting for review.")
    base_version = memory.version
    lessons = working_lessons(memory)
    if not lessons:
        raise CompactionError("Working memory is empty; there is nothing to compact.")
    draft, engine_name, model_name = _compute_draft(memory, lessons, engine)
    errors = validate(draft, input_lessons(lessons), memory.compaction_target_lines)
    try:
        with transaction.atomic():
            proposal = CompactionProposal.objects.create(
                memory=memory,
                base_version=base_version,
                engine=engine_name,
                model_name=model_name or "",
                status=CompactionProposal.Status.INVALID if errors else CompactionProposal.Status.PENDING,
                trigger=trigger,
                trigger_detail=trigger_detail[:300],
                validation_errors=errors,
                raw_output=draft.raw_output,
                input_lesson_ids=[l.pk for l in lessons],
                target_lines=max(memory.compaction_target_lines, sum(1 for l in lessons if l.is_must_keep)),
                before_text=render_working(with_refs(lessons)),
                created_by=actor.user,
            )
            _store_draft(proposal, draft)
    except IntegrityError:
        raise CompactionError("Another compaction proposal for this memory became pending meanwhile.") from None
    return proposal


def _store_draft(proposal, draft):
    ProposalLine.objects.bulk_create(
        ProposalLine(proposal=proposal, position=i, category=l.category[:20], text=l.text, refs=l.refs,
                     source_ids=l.source_ids, kind=l.kind or "rewritten", edited=l.edited)
        for i, l in enumerate(draft.lines, start=1)
    )
    ProposalDrop.objects.bulk_create(
        ProposalDrop(proposal=proposal, lesson_id=d.lesson_id, reason=d.reason[:500], had_refs=d.had_refs,
                     listed=d.listed)
        for d in draft.drops
    )


def compaction_check(*, memory_id):
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
        return compaction_propose(memory=memory, actor=services.Actor.job("compaction check"),
                                  trigger=CompactionProposal.Trigger.THRESHOLD, trigger_detail=detail)
    except CompactionError as exc:
        log.info("compaction check for memory %s: %s", memory_id, exc)
        return None


def _draft_from_rows(proposal):
    return Draft(
        lines=[DraftLine(category=l.category, text=l.text, refs=list(l.refs), source_ids=list(l.source_ids),
                         edited=l.edited, origin=f"Line {l.position}")
               for l in proposal.lines.order_by("position")],
        drops=[DraftDrop(lesson_id=d.lesson_id, reason=d.reason) for d in proposal.drops.filter(listed=True)],
    )


def _input_rows(proposal):
    return list(
        Lesson.objects.filter(pk__in=proposal.input_lesson_ids).prefetch_related("refs").order_by("id")
    )


def _lock_pending(proposal):
    proposal = CompactionProposal.objects.select_for_update().get(pk=proposal.pk)
    if proposal.status != CompactionProposal.Status.PENDING:
        raise CompactionError(f"This proposal is {proposal.get_status_display().lower()}; only a pending proposal "
                              "can be changed.")
    return proposal


@transaction.atomic
def compaction_line_update(*, line, actor, category, text, refs):
    """Edit one proposed line before applying. The whole proposal is re-validated; a failing edit changes nothing."""
    proposal = _lock_pending(line.proposal)
    category, text, refs = parse_edited_line(category=category, text=text, refs=refs)
    line = ProposalLine.objects.select_for_update().get(pk=line.pk, proposal=proposal)
    draft = _draft_from_rows(proposal)
    edited = draft.lines[[l.origin for l in draft.lines].index(f"Line {line.position}")]
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


@transaction.atomic
def compaction_reject(*, proposal, actor, reason):
    reason = (reason or "").strip()
    if not reason:
        raise ValidationError("Say why the proposal is rejected.")
    reason = check_text(reason, field="reason", multiline=True, max_chars=services.REASON_MAX_CHARS)
    proposal = CompactionProposal.objects.select_for_update().get(pk=proposal.pk)
    if proposal.status not in (CompactionProposal.Status.PENDING, CompactionProposal.Status.INVALID):
        raise CompactionError(f"This proposal is {proposal.get_status_display().lower()}; it cannot be rejected.")
    proposal.status = CompactionProposal.Status.REJECTED
    proposal.reason = reason
    proposal.decided_by = actor.user
    proposal.decided_at = timezone.now()
    proposal.save()
    return proposal


def compaction_apply(*, proposal, actor):
    """Apply a pending, valid proposal in one transaction. Returns the ChangeBatch.

    Raises StaleProposal (and marks the proposal stale) when the memory changed since the
    proposal was computed; raises CompactionError when the proposal is not applicable.
    """
    with transaction.atomic():
        proposal = _lock_pending(proposal)
        memory = Memory.objects.select_for_update().get(pk=proposal.memory_id)
        stale = memory.version != proposal.base_version
        if stale:
            proposal.status = CompactionProposal.Status.STALE
            proposal.reason = STALE_MESSAGE
            proposal.decided_at = timezone.now()
            proposal.save()
        else:
            batch = _apply_locked(proposal, memory, actor)
    if stale:
        raise StaleProposal()
    return batch


def _apply_locked(proposal, memory, actor):
    lessons = {l.pk: l for l in Lesson.objects.select_for_update().filter(pk__in=proposal.input_lesson_ids)
               .prefetch_related("refs")}
    current_ids = set(Lesson.objects.filter(memory=memory, tier=Tier.WORKING, status=LessonStatus.ACTIVE)
                      .values_list("pk", flat=True))
    if current_ids != set(proposal.input_lesson_ids):
        # The version check should have caught this; never compact a working memory the proposal did not see.
        raise CompactionError(STALE_MESSAGE)
    draft = _draft_from_rows(proposal)
    errors = validate(draft, input_lessons([lessons[i] for i in sorted(lessons)]), proposal.target_lines)
    if errors:
        raise CompactionError("This proposal does not pass validation: " + " ".join(errors))

    rows = list(proposal.lines.order_by("position"))
    batch = services.batch_create(
        memory=memory, kind=ChangeBatch.Kind.COMPACTION, actor=actor,
        label=f"Compaction proposal #{proposal.pk}: {len(lessons)} → {len(rows)} lessons",
        reason=f"Applied compaction proposal #{proposal.pk} ({proposal.engine}).",
    )
    section = services.next_section(memory)
    replaced_by = {}
    for row in rows:
        if row.kind == KEPT:
            continue
        sources = [lessons[i] for i in dict.fromkeys(row.source_ids)]
        new = services.lesson_create(
            memory=memory, tier=Tier.WORKING, category=row.category, text=row.text, refs=row.refs,
            relevance=Relevance.highest(s.relevance for s in sources),
            protected=any(s.protected for s in sources),
            lesson_date=max(s.lesson_date for s in sources), section=section, batch=batch,
            derived_from=sources, actor=actor, bump=False,
        )
        for source in sources:
            replaced_by.setdefault(source.pk, new)
    # Lessons leave working memory through the history services (never a hard delete), in the one batch.
    for lesson_id, new in replaced_by.items():
        services.lesson_supersede(lesson=lessons[lesson_id], superseded_by=new, actor=actor, batch=batch,
                                  bump=False)
    for drop in proposal.drops.all():
        services.lesson_delete(lesson=lessons[drop.lesson_id], actor=actor, batch=batch, reason=drop.reason,
                               bump=False)

    memory.last_compacted_at = timezone.now()
    memory.save(update_fields=["last_compacted_at"])
    services.memory_bump_version(memory)
    proposal.status = CompactionProposal.Status.APPLIED
    proposal.decided_by = actor.user
    proposal.decided_at = timezone.now()
    proposal.apply_batch = batch
    proposal.save()
    return batch


@transaction.atomic
def compaction_revert(*, proposal, actor, reason=""):
    """Undo an applied compaction through the history (batch_revert); the receiver marks it reverted."""
    proposal = CompactionProposal.objects.select_for_update().get(pk=proposal.pk)
    if proposal.status != CompactionProposal.Status.APPLIED or proposal.apply_batch is None:
        raise CompactionError("Only an applied compaction can be reverted.")
    return services.batch_revert(batch=proposal.apply_batch, actor=actor,
                                 reason=reason or f"Revert of compaction proposal #{proposal.pk}")


def on_batch_reverted(sender, batch, revert_batch, **kwargs):
    """A batch was reverted (from this page or from the history): keep proposals and links in step.

    Reverting a compaction marks its proposal reverted; reverting that revert applies the
    compaction again, and the re-applying batch becomes the one a later revert undoes.
    """
    proposal = CompactionProposal.objects.filter(apply_batch=batch).first()
    if proposal is not None:
        # The restored lessons are active again; they are no longer replaced by anything.
        Lesson.objects.filter(pk__in=batch.changes.values("lesson_id"), status=LessonStatus.ACTIVE).update(
            superseded_by=None
        )
        CompactionProposal.objects.filter(pk=proposal.pk).update(
            status=CompactionProposal.Status.REVERTED,
            reason=f"{revert_batch} by {revert_batch.actor_display} on {revert_batch.created_at:%Y-%m-%d %H:%M}.",
        )
        return
    if batch.kind != ChangeBatch.Kind.REVERT:
        return
    original = ChangeBatch.objects.filter(reverted_by=batch).first()
    proposal = CompactionProposal.objects.filter(apply_batch=original).first() if original else None
    if proposal is None or proposal.status != CompactionProposal.Status.REVERTED:
        return
    created = Lesson.objects.filter(
        pk__in=original.changes.filter(action=Change.Action.CREATE).values("lesson_id")
    ).prefetch_related("derived_from").order_by("id")
    for new in created:
        Lesson.objects.filter(pk__in=[s.pk for s in new.derived_from.all()], status=LessonStatus.SUPERSEDED,
                              superseded_by__isnull=True).update(superseded_by=new)
    CompactionProposal.objects.filter(pk=proposal.pk).update(
        status=CompactionProposal.Status.APPLIED, apply_batch=revert_batch,
        reason=f"Applied again by {revert_batch.actor_display} ({revert_batch}, undoing {batch}).",
    )
