"""Reads of the promotion feature, with a fixed number of queries whatever the data."""

from collections import defaultdict
from dataclasses import dataclass

from django.db.models import Prefetch
from django.utils import timezone

from memory.formats.lines import core_line, render_core
from memory.models import Lesson, LessonConfirmation, LessonRef, LessonStatus, PromotionCandidate, Tier
from memory.refs import parse_ref_list

Status = PromotionCandidate.Status


def pending_count(memory_ids=None):
    pending = PromotionCandidate.objects.filter(status=Status.PENDING)
    if memory_ids is not None:
        pending = pending.filter(memory_id__in=memory_ids)
    return pending.count()


def core_usage_after(memory):
    """Characters of the memory's core section as compiled (no budget cut applied)."""
    lessons = (
        Lesson.objects.filter(memory=memory, tier=Tier.CORE, status=LessonStatus.ACTIVE)
        .prefetch_related(Prefetch("refs", queryset=LessonRef.objects.order_by("position", "id")))
        .order_by("id")
    )
    return len(render_core([(lesson, list(lesson.refs.all())) for lesson in lessons]))


@dataclass
class Budget:
    current: int
    added: int
    budget: int

    @property
    def after(self):
        return self.current + self.added

    @property
    def over_by(self):
        return max(0, self.after - self.budget)

    @property
    def percent_after(self):
        return min(100, round(100 * self.after / self.budget)) if self.budget else 100

    @property
    def percent_current(self):
        return min(100, round(100 * self.current / self.budget)) if self.budget else 100


def _proposed_line_chars(candidate):
    try:
        refs = parse_ref_list("\n".join(candidate.refs))
    except Exception:  # refs were validated when proposed; never let display fail on them
        refs = []
    return len(core_line(candidate.category, candidate.text, refs, timezone.localdate())) + 1


def candidates_for_review(*, statuses=(Status.PENDING,), memory_ids=None, pks=None, limit=None):
    """Candidates with everything the inbox shows: supporting lessons (refs, confirmations) and the
    core budget of their memory after promotion. Five queries, however many candidates."""
    qs = (
        PromotionCandidate.objects.filter(status__in=statuses)
        .select_related("memory__persona", "memory__project", "decided_by", "core_lesson")
        .prefetch_related(
            Prefetch(
                "supporting",
                queryset=Lesson.objects.select_related("interaction")
                .prefetch_related(
                    Prefetch("refs", queryset=LessonRef.objects.order_by("position", "id")),
                    Prefetch("confirmations", queryset=LessonConfirmation.objects.order_by("confirmed_on", "id")),
                )
                .order_by("lesson_date", "id"),
            ),
            Prefetch("core_lesson__refs", queryset=LessonRef.objects.order_by("position", "id")),
        )
        .order_by("created_at", "id")
    )
    if memory_ids is not None:
        qs = qs.filter(memory_id__in=memory_ids)
    if pks is not None:
        qs = qs.filter(pk__in=pks)
    if limit:
        qs = qs.order_by("-decided_at", "-id")[:limit]
    candidates = list(qs)
    if not candidates:
        return candidates
    memory_ids = {c.memory_id for c in candidates}
    core_by_memory = defaultdict(list)
    for lesson in (
        Lesson.objects.filter(memory_id__in=memory_ids, tier=Tier.CORE, status=LessonStatus.ACTIVE)
        .prefetch_related(Prefetch("refs", queryset=LessonRef.objects.order_by("position", "id")))
        .order_by("id")
    ):
        core_by_memory[lesson.memory_id].append((lesson, list(lesson.refs.all())))
    current = {mid: len(render_core(items)) for mid, items in core_by_memory.items()}
    for candidate in candidates:
        candidate.budget = Budget(
            current=current.get(candidate.memory_id, 0),
            added=_proposed_line_chars(candidate),
            budget=candidate.memory.core_char_budget,
        )
    return candidates


def candidate_for_review(pk):
    found = candidates_for_review(statuses=Status.values, pks=[pk])
    return found[0] if found else None
