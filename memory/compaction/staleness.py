"""When a compaction proposal may still be applied: nothing it covers changed since it was computed.

A proposal covers the working lessons it read. Agents keep appending while it waits for review; those
lessons lie outside it and are kept as they are on apply, so they never make it stale. Neither do
writes to core, nor confirmations of lessons the proposal keeps or rewrites (apply carries them over
to the replacing lesson). What does: a covered lesson edited, deleted, promoted, protected or
otherwise changed (its fingerprint differs from the one stored), or a lesson the proposal drops being
seen again after the proposal was computed: the reviewer would approve dropping something the agents
have just said again.
"""

import hashlib
import json
from dataclasses import dataclass

from django.db.models import Prefetch

from memory.models import Change, Lesson, LessonConfirmation, LessonRef, ProposalDrop
from memory.services import lesson_snapshot

LEGACY_STALE = "working memory changed since this proposal (it predates per-lesson checks) — recompute it"


def lesson_fingerprint(lesson):
    """A digest of everything history records about a lesson (refs prefetched, or read into `ref_list`)."""
    data = json.dumps(lesson_snapshot(lesson, getattr(lesson, "ref_list", None)), sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(data.encode("utf-8")).hexdigest()[:32]


def fingerprints(lessons):
    return {str(lesson.pk): lesson_fingerprint(lesson) for lesson in lessons}


@dataclass
class CoveredChange:
    """One reason a proposal is stale, worded for the reviewer."""

    lesson_id: int | None
    how: str
    who: str = ""
    when: object = None

    def __str__(self):
        subject = f"Lesson #{self.lesson_id}" if self.lesson_id else "Working memory"
        text = f"{subject} {self.how}"
        if self.who:
            text += f" by {self.who}"
        if self.when:
            text += f" on {self.when:%Y-%m-%d %H:%M}"
        return text


def _quote(text, limit=80):
    text = text if len(text) <= limit else text[: limit - 1] + "…"
    return f"“{text}”"


def _describe(change):
    """How a Change altered a lesson, from its before/after snapshots."""
    before, after = change.before or {}, change.after or {}
    if before.get("status") != after.get("status"):
        verbs = {
            "deleted": "was deleted",
            "promoted": "was promoted to core",
            "superseded": "was superseded",
            "active": "was restored",
        }
        return verbs.get(after.get("status"), f"became {after.get('status')}")
    if before.get("protected") != after.get("protected"):
        return "was protected" if after.get("protected") else "was unprotected"
    if before.get("text") != after.get("text"):
        return f"was edited: {_quote(before.get('text', ''))} → {_quote(after.get('text', ''))}"
    changed = [
        key for key in ("category", "refs", "relevance", "lesson_date", "tier") if before.get(key) != after.get(key)
    ]
    details = ", ".join(f"{key.replace('_', ' ')} {before.get(key)} → {after.get(key)}" for key in changed)
    return f"was edited ({details})" if details else f"was {change.get_action_display().lower()}"


def _covered_lessons(proposal):
    return {
        lesson.pk: lesson
        for lesson in Lesson.objects.filter(pk__in=proposal.input_lesson_ids).prefetch_related(
            Prefetch("refs", queryset=LessonRef.objects.order_by("position", "id"))
        )
    }


def covered_changes(proposal, memory, lessons=None):
    """[CoveredChange] for everything that makes `proposal` stale; [] when it can still be applied.

    `lessons` ({id: Lesson} with refs prefetched) lets apply pass the rows it has locked, and the
    review page the rows it has already read.
    """
    if not proposal.input_fingerprints:
        # Made before fingerprints were stored: only the whole-memory version can tell.
        return [] if memory.version == proposal.base_version else [CoveredChange(None, LEGACY_STALE)]
    lessons = _covered_lessons(proposal) if lessons is None else lessons
    changed = [
        lesson_id
        for lesson_id in proposal.input_lesson_ids
        if lesson_id not in lessons
        or lesson_fingerprint(lessons[lesson_id]) != proposal.input_fingerprints.get(str(lesson_id))
    ]
    found = []
    if changed:
        latest = {}
        for change in Change.objects.filter(lesson_id__in=changed).select_related("batch__actor_user").order_by("-id"):
            latest.setdefault(change.lesson_id, change)
        for lesson_id in changed:
            change = latest.get(lesson_id)
            if lesson_id not in lessons:
                found.append(CoveredChange(lesson_id, "no longer exists"))
            elif change is None:
                found.append(CoveredChange(lesson_id, "changed outside the history"))
            else:
                found.append(CoveredChange(lesson_id, _describe(change), change.batch.actor_display, change.created_at))
    seen_again = (
        LessonConfirmation.objects.filter(
            lesson_id__in=ProposalDrop.objects.filter(proposal=proposal).values("lesson_id"),
            created_at__gt=proposal.created_at,
        )
        .select_related("interaction")
        .order_by("id")
    )
    reported = {c.lesson_id for c in found}
    for confirmation in seen_again:
        if confirmation.lesson_id in reported:
            continue
        reported.add(confirmation.lesson_id)
        who = (
            f"the reflection of interaction #{confirmation.interaction_id}"
            if confirmation.interaction_id
            else "an agent"
        )
        found.append(
            CoveredChange(
                confirmation.lesson_id, "was seen again although the proposal drops it", who, confirmation.created_at
            )
        )
    return found


def stale_reason(changes):
    return "; ".join(str(c) for c in changes) + "."
