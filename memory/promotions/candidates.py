"""What every way of proposing a promotion shares: the candidate's statuses, stamps and evidence, and
how new candidates are stored with their supporting lessons."""

import hashlib
import json
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from django.urls import reverse

from memory.models import Lesson, Memory, PromotionCandidate
from memory.signals import review_event

if TYPE_CHECKING:
    from memory.promotions.detection import Group
    from memory.promotions.wording import Proposal

Status = PromotionCandidate.Status
# A group whose evidence one of these already covers is not proposed again.
COVERING_STATUSES = (Status.PENDING, Status.REJECTED, Status.REVERTED, Status.APPROVED)
# Stamped on the candidates this detection makes. A pending candidate with another stamp came from
# an earlier detector: the next run keeps it only if it is still one of the groups found now.
DETECTOR = "words-3"
REFLECTOR = "reflector"


class PromotionError(Exception):
    """An approval or rejection that cannot happen; the message says why, for the person who asked."""


def evidence_of(group: "Group") -> dict[str, list[int]]:
    return {"lessons": sorted(group.lesson_ids), "confirmations": sorted(group.confirmation_ids)}


def _fingerprint(evidence: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(evidence, sort_keys=True).encode()).hexdigest()


def from_reflector(candidate: PromotionCandidate) -> bool:
    # A reflection holds the meaning of its observations, so pruning them (a reviewed drop) does not
    # make it stale; editing one still does.
    return candidate.evidence.get("source") == REFLECTOR


def new_candidate(
    memory: Memory,
    proposal: "Proposal",
    evidence: dict[str, Any],
    members: Sequence[tuple[Lesson, Any]],
    distinct_dates: int,
    now: datetime,
    **fields: Any,
) -> PromotionCandidate:
    return PromotionCandidate(
        memory=memory,
        text=proposal.text,
        category=proposal.category,
        refs=[r.as_text() for r in proposal.refs],
        evidence=evidence,
        fingerprint=_fingerprint(evidence),
        supporting_state={str(lesson.pk): {"hash": lesson.content_hash} for lesson, _ in members},
        distinct_dates=distinct_dates,
        engine=proposal.engine,
        engine_note=proposal.note,
        created_at=now,
        **fields,
    )


def insert_candidates(memory: Memory, candidates: list[PromotionCandidate], now: datetime) -> list[PromotionCandidate]:
    """Store new candidates and their supporting lessons in a few bulk queries."""
    created = PromotionCandidate.objects.bulk_create(candidates, batch_size=500)
    if created and created[0].pk is None:  # backends that do not return ids from bulk inserts
        created = list(PromotionCandidate.objects.filter(memory=memory, created_at=now).order_by("id"))
    Through = PromotionCandidate.supporting.through
    Through.objects.bulk_create(
        [Through(promotioncandidate_id=c.pk, lesson_id=i) for c in created for i in c.evidence["lessons"]],
        batch_size=2000,
    )
    if created:
        review_event.send(
            sender=PromotionCandidate,
            event_type="review.waiting",
            memory_id=memory.pk,
            data={
                "count": len(created),
                "items": [
                    {"kind": "promotion", "id": c.pk, "url": reverse("promotions:detail", args=[c.pk])} for c in created
                ],
            },
            lesson_texts={str(c.pk): c.text for c in created},
        )
    return created
