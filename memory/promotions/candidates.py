"""What every way of proposing a promotion shares: the candidate's statuses, stamps and evidence, and
how new candidates are stored with their supporting lessons."""

import hashlib
import json

from django.urls import reverse

from memory.models import PromotionCandidate
from memory.signals import review_event

Status = PromotionCandidate.Status
# A group whose evidence one of these already covers is not proposed again.
COVERING_STATUSES = (Status.PENDING, Status.REJECTED, Status.REVERTED, Status.APPROVED)
# Stamped on the candidates this detection makes. A pending candidate with another stamp came from
# an earlier detector: the next run keeps it only if it is still one of the groups found now.
DETECTOR = "words-3"
REFLECTOR = "reflector"


class PromotionError(Exception):
    """An approval or rejection that cannot happen; the message says why, for the person who asked."""


def evidence_of(group):
    return {"lessons": sorted(group.lesson_ids), "confirmations": sorted(group.confirmation_ids)}


def _fingerprint(evidence):
    return hashlib.sha256(json.dumps(evidence, sort_keys=True).encode()).hexdigest()


def from_reflector(candidate):
    # A reflection holds the meaning of its observations, so pruning them (a reviewed drop) does not
    # make it stale; editing one still does.
    return candidate.evidence.get("source") == REFLECTOR


def new_candidate(memory, proposal, evidence, members, distinct_dates, now, **fields):
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


def insert_candidates(memory, candidates, now):
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
