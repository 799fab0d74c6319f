"""A person's decisions on a candidate: approve it exactly once, reject it, decide several at once
(each through the single path), and follow its revert."""

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from memory import services
from memory.access import APPROVE, can
from memory.models import (
    ActorType,
    ChangeBatch,
    Lesson,
    LessonStatus,
    Memory,
    PromotionBulkDecision,
    PromotionCandidate,
    Relevance,
    Tier,
)
from memory.promotions.candidates import PromotionError, Status, from_reflector
from memory.promotions.detection_runs import promotion_detect_request
from memory.promotions.selectors import core_usage_after
from memory.signals import review_event
from memory.textcheck import check_text


class AlreadyDecided(PromotionError):
    """Someone decided it first; status and by say how and who (for a bulk decision's report)."""

    def __init__(self, message: str, *, status: str = "", by: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.by = by


class NeedsReview(PromotionError):
    """The supporting lessons changed after the proposal was made."""


@dataclass
class ApprovalResult:
    candidate: PromotionCandidate
    core_lesson: Lesson
    core_chars: int
    core_budget: int

    @property
    def over_budget(self) -> bool:
        return self.core_chars > self.core_budget


def _person(actor: services.Actor) -> User | None:
    """The user behind an action (None for a job or an agent)."""
    return cast("User | None", actor.user)  # Actor.user is declared as a plain object


def _describe_decision(candidate: PromotionCandidate) -> str:
    who = candidate.decided_by_label or "someone"
    when = timezone.localtime(candidate.decided_at).strftime("%Y-%m-%d %H:%M") if candidate.decided_at else ""
    suffix = f" at {when}" if when else ""
    if candidate.status == Status.APPROVED:
        return f"This promotion was already approved by {who}{suffix}."
    if candidate.status == Status.REJECTED:
        return f"This promotion was already rejected by {who}{suffix}."
    if candidate.status == Status.REVERTED:
        return "This promotion was approved and then reverted; it cannot be decided again."
    return "This proposal was superseded by a newer one; review that one instead."


def _already_decided(candidate: PromotionCandidate) -> AlreadyDecided:
    return AlreadyDecided(
        _describe_decision(candidate), status=candidate.status, by=candidate.decided_by_label or "someone"
    )


def _require_approver(actor: services.Actor, memory: Memory | None = None) -> None:
    """Without a memory: is the actor an approver anywhere (a bulk decision checks each candidate's
    memory again as it decides it)."""
    if actor.type != ActorType.USER or actor.user is None or not can(actor.user, APPROVE, memory):
        raise PermissionDenied("Only a signed-in person with the approver role can decide promotions.")


def _changed_lessons(candidate: PromotionCandidate, lessons: Iterable[Lesson]) -> list[str]:
    by_id = {lesson.pk: lesson for lesson in lessons}
    problems = []
    for lesson_id, state in candidate.supporting_state.items():
        lesson = by_id.get(int(lesson_id))
        if lesson is None:
            problems.append(f"lesson {lesson_id} no longer exists")
        elif lesson.status == LessonStatus.DELETED and from_reflector(candidate):
            continue
        elif lesson.status != LessonStatus.ACTIVE or lesson.tier != Tier.WORKING:
            problems.append(f"lesson {lesson_id} is now {lesson.status} ({lesson.tier})")
        elif lesson.content_hash != state.get("hash"):
            problems.append(f"lesson {lesson_id} was edited")
    return problems


def _lock_unchanged_supporting(candidate: PromotionCandidate) -> list[Lesson]:
    """The candidate's supporting lessons, locked; NeedsReview when one changed since it was proposed."""
    supporting = list(
        Lesson.objects.select_for_update().filter(pk__in=[int(i) for i in candidate.supporting_state]).order_by("id")
    )
    problems = _changed_lessons(candidate, supporting)
    if problems:
        raise NeedsReview(
            "The supporting lessons changed since this was proposed (" + "; ".join(problems) + "). "
            "Review the refreshed proposal instead."
        )
    return supporting


def _highest_relevance(lessons: Iterable[Lesson]) -> str:
    return Relevance.highest(lesson.relevance for lesson in lessons)


@transaction.atomic
def promotion_approve(
    *,
    candidate: PromotionCandidate,
    actor: services.Actor,
    text: str | None = None,
    category: str | None = None,
    refs: Sequence[Any] | None = None,
    reason: str = "",
    bulk: PromotionBulkDecision | None = None,
) -> ApprovalResult:
    """Create the core lesson and retire its supporting lessons, as one revertible batch, exactly once.

    The candidate row is locked first, so of two approvers clicking together one creates the
    lesson and the other is told who already approved it.
    """
    candidate = PromotionCandidate.objects.select_for_update().select_related("memory").get(pk=candidate.pk)
    _require_approver(actor, candidate.memory)
    if candidate.status != Status.PENDING:
        raise _already_decided(candidate)
    memory = candidate.memory
    final_text = candidate.text if text is None else text.strip()
    final_category = candidate.category if category is None else category
    final_refs = candidate.refs if refs is None else refs
    # Checked before anything is written: the batch's label quotes the text.
    services.validate_lesson_fields(
        tier=Tier.CORE, category=final_category, text=final_text, relevance=Relevance.MEDIUM
    )
    edited = (final_text, final_category) != (candidate.text, candidate.category) or (
        refs is not None and [r.as_text() for r in services.clean_refs(final_refs)] != candidate.refs
    )
    supporting = _lock_unchanged_supporting(candidate)
    batch = services.batch_create(
        memory=memory,
        kind=ChangeBatch.Kind.PROMOTION,
        actor=actor,
        reason=reason,
        label=(
            f"Promotion #{candidate.pk}" + (f" (bulk approval #{bulk.pk})" if bulk else "") + f": {final_text[:120]}"
        ),
    )
    core = services.lesson_create(
        memory=memory,
        tier=Tier.CORE,
        category=final_category,
        text=final_text,
        refs=final_refs,
        relevance=_highest_relevance(supporting),
        actor=actor,
        batch=batch,
        derived_from=supporting,
        lesson_date=timezone.localdate(),
        bump=False,
    )
    for lesson in supporting:
        if lesson.status != LessonStatus.ACTIVE:
            continue  # a reflection's observation already pruned from working memory
        services.lesson_promote(lesson=lesson, actor=actor, batch=batch, reason=f"Promoted into core lesson {core.pk}")
    now = timezone.now()
    updated = PromotionCandidate.objects.filter(pk=candidate.pk, status=Status.PENDING).update(
        status=Status.APPROVED,
        decided_by=_person(actor),
        decided_by_label=actor.label[:200],
        decided_at=now,
        core_lesson=core,
        batch=batch,
        edited=edited,
        reason=reason,
        bulk=bulk,
    )
    if updated != 1:  # belt and braces for databases without row locks
        raise AlreadyDecided("This promotion was already decided by someone else.")
    services.memory_bump_version(memory)
    candidate.refresh_from_db()
    if bulk is None:
        _decided_event([candidate], "approved", actor)
    usage = core_usage_after(memory)
    return ApprovalResult(candidate=candidate, core_lesson=core, core_chars=usage, core_budget=memory.core_char_budget)


@transaction.atomic
def promotion_reject(
    *,
    candidate: PromotionCandidate,
    actor: services.Actor,
    reason: str | None,
    bulk: PromotionBulkDecision | None = None,
) -> PromotionCandidate:
    """Record who rejected the proposal and why; its lessons stay in working memory."""
    reason = _clean_reject_reason(reason)
    candidate = PromotionCandidate.objects.select_for_update().select_related("memory").get(pk=candidate.pk)
    _require_approver(actor, candidate.memory)
    if candidate.status != Status.PENDING:
        raise _already_decided(candidate)
    candidate.status = Status.REJECTED
    candidate.decided_by = _person(actor)
    candidate.decided_by_label = actor.label[:200]
    candidate.decided_at = timezone.now()
    candidate.reason = reason
    candidate.bulk = bulk
    candidate.save(update_fields=["status", "decided_by", "decided_by_label", "decided_at", "reason", "bulk"])
    if bulk is None:
        _decided_event([candidate], "rejected", actor)
    return candidate


def _decided_event(candidates: list[PromotionCandidate], decision: str, actor: services.Actor) -> None:
    """One review.decided event per team listing the candidates decided (one for a single decision,
    one for a bulk decision within a team); an endpoint of one team never sees another team's items.
    Single decisions name their memory; the team is then read when the event is sent."""
    groups: dict[int | None, list[PromotionCandidate]] = {}
    for candidate in candidates:
        key = candidate.memory.project.team_id if len(candidates) > 1 else None
        groups.setdefault(key, []).append(candidate)
    for team_id, decided in groups.items():
        memory_ids = {c.memory_id for c in decided}
        review_event.send(
            sender=PromotionCandidate,
            event_type="review.decided",
            memory_id=decided[0].memory_id if len(memory_ids) == 1 else None,
            team_id=team_id,
            data={
                "decision": decision,
                "by": actor.label,
                "count": len(decided),
                "items": [
                    {"kind": "promotion", "id": c.pk, "url": reverse("promotions:detail", args=[c.pk])} for c in decided
                ],
            },
            lesson_texts={str(c.pk): c.text for c in decided},
        )


def _clean_reject_reason(reason: str | None) -> str:
    reason = (reason or "").strip()
    if not reason:
        raise ValidationError({"reason": "Say why the proposal is rejected; the reason is kept with the decision."})
    return check_text(reason, field="reason", multiline=True, max_chars=services.REASON_MAX_CHARS)


BULK_MAX = 500


@dataclass
class BulkOutcome:
    """How each candidate of a bulk decision went: decided, already decided by someone else, held back
    because its supporting lessons changed, or refused for another reason. Each entry: {id, message}."""

    bulk: PromotionBulkDecision
    decided: list[int] = field(default_factory=list)
    already: list[dict[str, Any]] = field(default_factory=list)
    changed: list[dict[str, Any]] = field(default_factory=list)
    refused: list[dict[str, Any]] = field(default_factory=list)

    def as_json(self) -> dict[str, list[Any]]:
        return {"decided": self.decided, "already": self.already, "changed": self.changed, "refused": self.refused}


def promotion_bulk_decide(
    *, candidate_ids: Iterable[int | str], actor: services.Actor, action: str, reason: str | None = ""
) -> BulkOutcome:
    """Approve or reject several candidates, each through the single-candidate path in its own
    transaction and batch, so each is decided exactly once (its row lock) and any one can be
    reverted alone; the lot is recorded as one PromotionBulkDecision.

    Not atomic as a whole on purpose: of two leads deciding overlapping selections at once, each
    gets the candidates nobody decided first, and is told which were already decided and by whom,
    and which could not go because a supporting lesson changed. A bad request (no candidate, an
    unknown action, a rejection without a reason) raises ValidationError and changes nothing.
    """
    _require_approver(actor)
    if action not in PromotionBulkDecision.Action.values:
        raise ValidationError({"action": "Choose approve or reject."})
    ids = list(dict.fromkeys(int(i) for i in candidate_ids))
    if not ids:
        raise ValidationError({"candidates": "Select at least one candidate."})
    if len(ids) > BULK_MAX:
        raise ValidationError({"candidates": f"Decide at most {BULK_MAX} candidates at once."})
    reject = action == PromotionBulkDecision.Action.REJECT
    reason = _clean_reject_reason(reason) if reject else ""
    bulk = PromotionBulkDecision.objects.create(
        action=action,
        reason=reason,
        decided_by=_person(actor),
        decided_by_label=actor.label[:200],
        requested=ids,
    )
    outcome = BulkOutcome(bulk=bulk)
    found = {c.pk: c for c in PromotionCandidate.objects.filter(pk__in=ids).select_related("memory__project")}
    to_refresh: dict[int, Memory] = {}
    for pk in ids:
        candidate = found.get(pk)
        if candidate is None:
            outcome.refused.append({"id": pk, "message": f"Candidate #{pk} does not exist."})
            continue
        try:
            if reject:
                promotion_reject(candidate=candidate, actor=actor, reason=reason, bulk=bulk)
            else:
                promotion_approve(candidate=candidate, actor=actor, bulk=bulk)
        except AlreadyDecided as exc:
            outcome.already.append({"id": pk, "status": exc.status, "by": exc.by, "message": str(exc)})
        except NeedsReview as exc:
            outcome.changed.append({"id": pk, "message": str(exc)})
            to_refresh[candidate.memory_id] = candidate.memory
        except ValidationError as exc:
            outcome.refused.append({"id": pk, "message": " ".join(exc.messages)})
        else:
            outcome.decided.append(pk)
    with transaction.atomic():
        bulk.outcome = outcome.as_json()
        bulk.save(update_fields=["outcome"])
        if outcome.decided:
            _decided_event([found[pk] for pk in outcome.decided], "rejected" if reject else "approved", actor)
    for memory in to_refresh.values():
        # As after a single approval that needs review: an up-to-date proposal to look at.
        promotion_detect_request(memory=memory)
    return outcome


def promotion_follow_revert(*, batch: ChangeBatch, revert_batch: ChangeBatch) -> None:
    """Reverting an approval's batch brings the working lessons back and retires the core lesson."""
    PromotionCandidate.objects.filter(batch=batch, status=Status.APPROVED).update(
        status=Status.REVERTED, revert_batch=revert_batch
    )
