"""Reads of the promotion feature, with a fixed number of queries whatever the data."""

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.db.models import Exists, OuterRef, Prefetch, QuerySet
from django.utils import timezone

from memory.access import EVERY_MEMORY, VIEW, MemoryIds, scope
from memory.formats.lines import core_line, render_core
from memory.listing import window
from memory.models import (
    Lesson,
    LessonConfirmation,
    LessonRef,
    LessonStatus,
    PromotionBulkDecision,
    PromotionCandidate,
    Tier,
)
from memory.refs import parse_ref_list

Status = PromotionCandidate.Status


def pending_count(memory_ids: MemoryIds) -> int:
    """Candidates waiting for a decision in these memories (EVERY_MEMORY: in all)."""
    pending = PromotionCandidate.objects.filter(status=Status.PENDING)
    if memory_ids is not EVERY_MEMORY:
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


# --- the inbox: one scoped queryset, paged oldest-waiting first ----------------------------------

INBOX_PAGE_SIZE = 20
KINDS = {"recurring": "Recurring lessons", "reflection": "Pipeline reflections"}
AGES = {1: "a day or more", 7: "a week or more", 30: "30 days or more"}


@dataclass(frozen=True)
class InboxFilters:
    """What the inbox shows: every field optional; ids are trusted to be whole numbers."""

    persona: int | None = None
    project: int | None = None
    memory: int | None = None
    kind: str = ""
    min_age_days: int | None = None

    @property
    def active(self):
        return any((self.persona, self.project, self.memory, self.kind, self.min_age_days))


def inbox_candidates(
    *, user: Any, action: str = VIEW, filters: InboxFilters | None = None, statuses: Iterable[str] = (Status.PENDING,)
) -> QuerySet[PromotionCandidate]:
    """Every read of candidates from the inbox (cards, bulk decisions, lazily loaded lessons) starts
    here, so what a person may see (their teams' memories) is one filter in one place."""
    qs = scope(PromotionCandidate.objects.filter(status__in=statuses), user, action)
    filters = filters or InboxFilters()
    if filters.persona:
        qs = qs.filter(memory__persona_id=filters.persona)
    if filters.project:
        qs = qs.filter(memory__project_id=filters.project)
    if filters.memory:
        qs = qs.filter(memory_id=filters.memory)
    if filters.kind == "reflection":
        qs = qs.filter(evidence__source="reflector")
    elif filters.kind == "recurring":
        qs = qs.exclude(evidence__source="reflector")
    if filters.min_age_days:
        qs = qs.filter(created_at__lte=timezone.now() - timedelta(days=filters.min_age_days))
    return qs.order_by("created_at", "id")


def inbox_page(*, user: Any, filters: InboxFilters | None = None, page: Any = 1, per_page: int | None = None) -> Any:
    """One page of pending candidates, oldest waiting first, as cards without their supporting
    lessons (those load when a card is opened). Reads a count, the page's rows and the core lessons
    of the page's memories: what it reads is bounded by the page size, not by how many wait."""
    qs = inbox_candidates(user=user, filters=filters).select_related("memory__persona", "memory__project")
    current = window(qs, per_page or INBOX_PAGE_SIZE, page)
    current.object_list = _with_budgets(current.object_list)
    return current


def recent_decisions(*, user: Any, filters: InboxFilters | None = None, limit: int = 10) -> list[PromotionCandidate]:
    """The latest decided candidates, newest first, with what the table shows (no supporting lessons)."""
    return list(
        inbox_candidates(user=user, filters=filters, statuses=(Status.APPROVED, Status.REJECTED, Status.REVERTED))
        .select_related("memory__persona", "memory__project", "core_lesson", "bulk")
        .order_by("-decided_at", "-id")[:limit]
    )


def recent_bulk_decisions(*, user: Any, limit: int = 5) -> list[PromotionBulkDecision]:
    """The latest bulk decisions that decided a candidate this person can see, newest first."""
    seen = inbox_candidates(user=user, statuses=Status.values).filter(bulk=OuterRef("pk"))
    return list(PromotionBulkDecision.objects.filter(Exists(seen)).order_by("-created_at", "-id")[:limit])


def candidates_for_review(
    *,
    user: Any,
    statuses: Iterable[str] = (Status.PENDING,),
    pks: Iterable[int] | None = None,
    limit: int | None = None,
    with_lessons: bool = True,
) -> list[PromotionCandidate]:
    """The candidates `user` may see with everything a card shows: supporting lessons (refs,
    confirmations; with with_lessons) and the core budget of their memory after promotion. Five
    queries, however many candidates."""
    qs = (
        inbox_candidates(user=user, statuses=statuses)
        .select_related("memory__persona", "memory__project", "decided_by", "core_lesson")
        .prefetch_related(Prefetch("core_lesson__refs", queryset=LessonRef.objects.order_by("position", "id")))
    )
    if with_lessons:
        qs = qs.prefetch_related(Prefetch("supporting", queryset=supporting_lessons()))
    if pks is not None:
        qs = qs.filter(pk__in=pks)
    if limit:
        qs = qs.order_by("-decided_at", "-id")[:limit]
    candidates = list(qs)
    for candidate in candidates:
        candidate.lessons_loaded = with_lessons  # type: ignore[attr-defined]  # read by the card template
    return _with_budgets(candidates)


def supporting_lessons():
    """A candidate's supporting lessons as its card lists them, oldest first."""
    return (
        Lesson.objects.select_related("interaction")
        .prefetch_related(
            Prefetch("refs", queryset=LessonRef.objects.order_by("position", "id")),
            Prefetch("confirmations", queryset=LessonConfirmation.objects.order_by("confirmed_on", "id")),
        )
        .order_by("lesson_date", "id")
    )


def _with_budgets(candidates):
    """Sets candidate.budget: the core characters of its memory now and after approving it."""
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


def candidate_for_review(pk: int, *, user: Any) -> PromotionCandidate | None:
    """One candidate as its page shows it, if `user` may see it."""
    found = candidates_for_review(user=user, statuses=Status.values, pks=[pk])
    return found[0] if found else None
