"""Writes of a person's decisions on temporary lessons: proposed expiries accepted or rejected, and
expired lessons restored or retired.

Every lesson write goes through the write path (memory.services) in one batch of its own, which
revert undoes: reverting an accepted proposal's batch makes the proposal wait again. A core lesson
is dated only by a person (lesson_set_expiry refuses anyone else), so a proposal on a core lesson
takes effect only when a person accepts it.
"""

from collections.abc import Iterable
from datetime import date
from typing import Any

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from memory import services
from memory.models import ChangeBatch, ExpiryProposal, Lesson
from memory.signals import review_event


class _AsProposed:
    def __repr__(self) -> str:
        return "AS_PROPOSED"


# expiry_accept's default: keep the value the detector proposed (None clears the date, "" the condition).
AS_PROPOSED: Any = _AsProposed()


def _announce_proposals(event_type: str, proposals: list[ExpiryProposal], *, decision: str = "", by: str = "") -> None:
    """What a team hears (an outbox row in the caller's transaction): proposed expiries wait, or were
    decided. Lesson text goes only to endpoints that ask for it."""
    memory_ids = {p.memory_id for p in proposals}
    texts = dict(Lesson.objects.filter(pk__in=[p.lesson_id for p in proposals]).values_list("pk", "text"))
    data: dict = {
        "count": len(proposals),
        "items": [
            {
                "kind": "expiry",
                "id": p.pk,
                "lesson": p.lesson_id,
                "expires_on": p.expires_on.isoformat() if p.expires_on else None,
                "url": reverse("conflicts:expiries") + f"#expiry-{p.pk}",
            }
            for p in proposals
        ],
    }
    if decision:
        data.update(decision=decision, by=by)
    review_event.send(
        sender=ExpiryProposal,
        event_type=event_type,
        memory_id=proposals[0].memory_id if len(memory_ids) == 1 else None,
        team_id=None if len(memory_ids) == 1 else proposals[0].memory.project.team_id,
        data=data,
        lesson_texts={str(p.pk): texts.get(p.lesson_id, "") for p in proposals},
    )


def _announce_lesson(lesson: Lesson, *, decision: str, by: str) -> None:
    review_event.send(
        sender=Lesson,
        event_type="review.decided",
        memory_id=lesson.memory_id,
        data={
            "count": 1,
            "items": [{"kind": "expired lesson", "id": lesson.pk, "url": reverse("lesson_history", args=[lesson.pk])}],
            "decision": decision,
            "by": by,
        },
        lesson_texts={str(lesson.pk): lesson.text},
    )


def expiry_proposals_announce(proposals: list[ExpiryProposal]) -> None:
    """Detection stored new proposals for one memory: its team hears that they wait."""
    if proposals and proposals[0].pk is not None:
        _announce_proposals("review.waiting", proposals)


def _locked_pending(proposal: ExpiryProposal) -> ExpiryProposal:
    proposal = (
        ExpiryProposal.objects.select_for_update(of=("self",))
        .select_related("lesson", "memory__project")
        .get(pk=proposal.pk)
    )
    if proposal.status != ExpiryProposal.Status.PENDING:
        raise ValidationError(f"this proposed expiry is already {proposal.get_status_display().lower()}")
    return proposal


def _decide(
    proposal: ExpiryProposal, *, status: str, actor: services.Actor, batch: ChangeBatch | None, announce: bool
) -> ExpiryProposal:
    proposal.status, proposal.batch = status, batch
    proposal.decided_by, proposal.decided_at = actor.user, timezone.now()
    proposal.save(update_fields=["status", "batch", "decided_by", "decided_at"])
    if announce:
        _announce_proposals("review.decided", [proposal], decision=status, by=actor.label)
    return proposal


@transaction.atomic
def expiry_accept(
    *,
    proposal: ExpiryProposal,
    actor: services.Actor,
    expires_on: date | None = AS_PROPOSED,
    expires_when: str = AS_PROPOSED,
    reason: str = "",
    announce: bool = True,
) -> ExpiryProposal:
    """The lesson takes the proposed expiry (or the reviewer's edit of it), in one revertible batch.
    Bad values (a date that is not one, a condition too long or unreadable) change nothing."""
    proposal = _locked_pending(proposal)
    expires_on = proposal.expires_on if expires_on is AS_PROPOSED else expires_on
    expires_when = proposal.expires_when if expires_when is AS_PROPOSED else (expires_when or "")
    if expires_on is None and not expires_when.strip():
        raise ValidationError("An expiry needs a date or a condition; to keep the lesson for good, reject it.")
    lesson = proposal.lesson
    batch = None
    if (lesson.expires_on, lesson.expires_when) != (expires_on, expires_when.strip()):  # else nothing to write
        batch = services.batch_create(
            memory=proposal.memory,
            kind=ChangeBatch.Kind.MANUAL,
            actor=actor,
            label="Expiry: accepted a proposed expiry",
            reason=reason,
        )
        services.lesson_set_expiry(
            lesson=lesson, expires_on=expires_on, expires_when=expires_when, actor=actor, reason=reason, batch=batch
        )
    return _decide(proposal, status=ExpiryProposal.Status.ACCEPTED, actor=actor, batch=batch, announce=announce)


@transaction.atomic
def expiry_reject(*, proposal: ExpiryProposal, actor: services.Actor, announce: bool = True) -> ExpiryProposal:
    """The lesson holds for good: nothing changes, and the lesson is not proposed again."""
    proposal = _locked_pending(proposal)
    return _decide(proposal, status=ExpiryProposal.Status.REJECTED, actor=actor, batch=None, announce=announce)


def expiries_follow_revert(*, batch: ChangeBatch) -> int:
    """An acceptance's batch was reverted: its proposal waits again."""
    return ExpiryProposal.objects.filter(batch=batch).update(
        status=ExpiryProposal.Status.PENDING, batch=None, decided_by=None, decided_at=None
    )


def expiries_bulk_decide(
    *, proposals: Iterable[ExpiryProposal], decision: str, actor: services.Actor, reason: str = ""
) -> tuple[int, list[str]]:
    """Accept (as proposed) or reject many proposals, each in its own batch (so each reverts on its
    own). One that can no longer be decided is set aside with the reason. Returns (decided, [refusals])."""
    if decision not in ("accept", "reject"):
        raise ValidationError("Choose accept or reject.")
    done: list[ExpiryProposal] = []
    refused: list[str] = []
    for proposal in proposals:
        try:
            if decision == "accept":
                done.append(expiry_accept(proposal=proposal, actor=actor, reason=reason, announce=False))
            else:
                done.append(expiry_reject(proposal=proposal, actor=actor, announce=False))
        except (ValidationError, PermissionDenied) as exc:
            refused.append(f"Proposed expiry {proposal.pk}: {'; '.join(getattr(exc, 'messages', [str(exc)]))}")
    by_team: dict[int | None, list[ExpiryProposal]] = {}
    decided = ExpiryProposal.objects.filter(pk__in=[p.pk for p in done]).select_related("lesson", "memory__project")
    for proposal in decided:
        by_team.setdefault(proposal.memory.project.team_id, []).append(proposal)
    with transaction.atomic():  # one event per team: an endpoint never sees another team's items
        for team_proposals in by_team.values():
            _announce_proposals("review.decided", team_proposals, decision=f"{decision}ed", by=actor.label)
    return len(done), refused


def _locked_expired(lesson: Lesson) -> Lesson:
    lesson = Lesson.objects.select_for_update(of=("self",)).select_related("memory").get(pk=lesson.pk)
    if not lesson.is_expired:
        raise ValidationError(f"lesson {lesson.pk} is not an expired live lesson")
    return lesson


@transaction.atomic
def expired_lesson_restore(
    *, lesson: Lesson, actor: services.Actor, expires_on: date | None = None, reason: str = ""
) -> Lesson:
    """An expired lesson holds again: its expiry is cleared (expires_on None) or moved to a later day
    (its condition kept), in one revertible batch; agents read it again at once."""
    lesson = _locked_expired(lesson)
    if expires_on is not None and expires_on <= timezone.localdate():
        raise ValidationError("Move the expiry to a day after today, or leave the date empty to clear it.")
    batch = services.batch_create(
        memory=lesson.memory,
        kind=ChangeBatch.Kind.MANUAL,
        actor=actor,
        label="Expiry: restored an expired lesson",
        reason=reason,
    )
    lesson = services.lesson_set_expiry(
        lesson=lesson,
        expires_on=expires_on,
        expires_when=lesson.expires_when if expires_on is not None else "",
        actor=actor,
        reason=reason,
        batch=batch,
    )
    _announce_lesson(lesson, decision="restored", by=actor.label)
    return lesson


@transaction.atomic
def expired_lesson_retire(*, lesson: Lesson, actor: services.Actor, reason: str = "") -> Lesson:
    """An expired lesson is done with: deleted softly (restorable), in one revertible batch."""
    lesson = _locked_expired(lesson)
    batch = services.batch_create(
        memory=lesson.memory,
        kind=ChangeBatch.Kind.MANUAL,
        actor=actor,
        label="Expiry: retired an expired lesson",
        reason=reason,
    )
    lesson = services.lesson_delete(lesson=lesson, actor=actor, reason=reason, batch=batch)
    _announce_lesson(lesson, decision="retired", by=actor.label)
    return lesson
