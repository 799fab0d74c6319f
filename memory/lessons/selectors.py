"""Reads for the review dashboard: the home grid, the filtered lesson list, history."""

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import User
from django.core.cache import cache
from django.db.models import Count, Prefetch, Q, QuerySet
from django.utils import timezone

from memory.formats.lines import render_core, render_working
from memory.models import Change, ChangeBatch, Lesson, LessonRef, LessonStatus, Memory, Tier
from memory.refs.models import NEEDS_REVIEW
from memory.review_queue import Queue, has_waiting_items, queue_for
from memory.selectors import compile_memory

_REFS = Prefetch("refs", queryset=LessonRef.objects.order_by("position", "id"))
# The memory page shows what the last check found beside each ref.
_REFS_CHECKED = Prefetch("refs", queryset=LessonRef.objects.select_related("anchor").order_by("position", "id"))


@dataclass
class TierUsage:
    count: int
    chars: int
    budget: int

    @property
    def over(self) -> bool:
        return self.chars > self.budget

    @property
    def percent(self) -> int:
        return min(100, round(100 * self.chars / self.budget)) if self.budget else 100


# A lesson with its refs, as the tier files render them.
LessonWithRefs = tuple[Lesson, list[LessonRef]]


def tier_usage(
    memory: Memory, core_items: Sequence[LessonWithRefs], working_items: Sequence[LessonWithRefs]
) -> tuple[TierUsage, TierUsage]:
    """Size of each tier as the agent's files hold it, against the tier's budget."""
    return (
        TierUsage(len(core_items), len(render_core(core_items)), memory.core_char_budget),
        TierUsage(len(working_items), len(render_working(working_items)), memory.working_char_budget),
    )


def active_by_memory(
    memory_ids: Iterable[int],
) -> defaultdict[int, tuple[list[LessonWithRefs], list[LessonWithRefs]]]:
    """{memory_id: (core [(lesson, refs)], working [(lesson, refs)])} in two queries."""
    grouped: defaultdict[int, tuple[list[LessonWithRefs], list[LessonWithRefs]]] = defaultdict(lambda: ([], []))
    lessons = (
        Lesson.objects.filter(memory_id__in=memory_ids, status=LessonStatus.ACTIVE)
        .only(
            "id",
            "memory_id",
            "tier",
            "category",
            "text",
            "lesson_date",
            "section",
            "unparsed",
            "raw_line",
            "undated",
            "section_heading",
        )
        .prefetch_related(_REFS)
        .order_by("id")
    )
    for lesson in lessons:
        core, working = grouped[lesson.memory_id]
        (core if lesson.tier == Tier.CORE else working).append((lesson, list(lesson.refs.all())))
    return grouped


HOME_PAGE_SIZE = 24
# What a line costs around its text in the tier's file ("- [PATTERN] " and the newline; a core line's
# " (promoted 2026-01-31)"). Home shows sizes from database sums over the page's memories; refs and
# section headings are left out, so the memory page (which renders the files) has the exact figure.
_LINE_OVERHEAD: dict[str, int] = {Tier.CORE: 6 + 22, Tier.WORKING: 6}


@dataclass
class MemoryCard:
    memory: Memory
    core: TierUsage
    working: TierUsage
    queue: Queue  # of this memory


def tier_sizes(memory_ids: Iterable[int]) -> dict[tuple[int, str], tuple[int, int]]:
    """{(memory_id, tier): (count, approximate chars)} of active lessons, summed by the database over
    these memories only: one query whose rows read are bounded by the page, not the organisation."""
    from django.db.models import Count, Sum
    from django.db.models.functions import Length

    rows = (
        Lesson.objects.filter(memory_id__in=memory_ids, status=LessonStatus.ACTIVE)
        .order_by()
        .values("memory_id", "tier")
        .annotate(n=Count("id"), chars=Sum(Length("text") + Length("category")))
    )
    return {
        (r["memory_id"], r["tier"]): (r["n"], (r["chars"] or 0) + r["n"] * _LINE_OVERHEAD.get(r["tier"], 6))
        for r in rows
    }


def home_memories(
    user: User, *, q: str = "", team: str = "", waiting: bool = False, include_archived: bool = False
) -> QuerySet[Memory]:
    """The memories home lists for `user`, its teams' first, grouped by team then persona and project."""
    from django.db.models import F

    from memory.access import visible_memories

    memories = visible_memories(user).select_related("persona", "project__team")
    if not include_archived:
        memories = memories.filter(persona__archived_at__isnull=True)
    if q:
        memories = memories.filter(
            Q(persona__name__icontains=q) | Q(project__name__icontains=q) | Q(project__slug__icontains=q)
        )
    if team == "none":
        memories = memories.filter(project__team__isnull=True)
    elif team:
        memories = memories.filter(project__team__slug=team)
    if waiting:
        memories = memories.filter(has_waiting_items())
    return memories.order_by(F("project__team__name").asc(nulls_last=True), "persona__name", "project__name", "id")


def memory_cards(memories: Sequence[Memory], review_counts: dict[str, Any]) -> list[MemoryCard]:
    """A card per memory of one page: counts and sizes from one aggregate query over those memories."""
    sizes = tier_sizes([m.pk for m in memories])
    cards = []
    for memory in memories:
        core_n, core_chars = sizes.get((memory.pk, Tier.CORE), (0, 0))
        working_n, working_chars = sizes.get((memory.pk, Tier.WORKING), (0, 0))
        cards.append(
            MemoryCard(
                memory,
                TierUsage(core_n, core_chars, memory.core_char_budget),
                TierUsage(working_n, working_chars, memory.working_char_budget),
                queue_for(memory.pk, review_counts),
            )
        )
    return cards


@dataclass
class BudgetState:
    """Each tier's size against its budget, and which active lessons the compiled memory cuts."""

    core: TierUsage
    working: TierUsage
    core_cut: list[int]
    working_cut: list[int]

    @property
    def cut_ids(self) -> set[int]:
        return set(self.core_cut) | set(self.working_cut)


def budget_state(memory: Memory) -> BudgetState:
    """BudgetState of one memory, cached per memory version (every mutation bumps it) and day (an
    expiring lesson leaves compiled memory on its day without a new version)."""
    key = f"nw:dash:budget:{memory.pk}:{memory.version}:{timezone.localdate().isoformat()}"
    state = cache.get(key)
    if state is None:
        compiled = compile_memory(memory)
        core, working = active_by_memory([memory.pk])[memory.pk]
        core_usage, working_usage = tier_usage(memory, core, working)
        state = BudgetState(core_usage, working_usage, compiled.core_cut, compiled.working_cut)
        cache.set(key, state, timeout=24 * 3600)
    return state


# --- the memory page -------------------------------------------------------------------------

STATUS_CHOICES = [
    ("active", "Active"),
    ("promoted", "Promoted"),
    ("superseded", "Superseded"),
    ("deleted", "Deleted"),
    ("expired", "Expired (waiting for a decision)"),
    ("all", "Any status"),
]


def lesson_queryset(
    memory: Memory,
    *,
    tier: str = "",
    category: str = "",
    relevance: str = "",
    status: str = "active",
    q: str = "",
    path: str = "",
    refs: str = "",
) -> QuerySet[Lesson]:
    """The memory page's lessons: core first, then working, each in file order."""
    lessons = Lesson.objects.filter(memory=memory)
    if tier:
        lessons = lessons.filter(tier=tier)
    if category:
        lessons = lessons.filter(category="" if category == "none" else category)
    if relevance:
        lessons = lessons.filter(relevance=relevance)
    if status == "expired":  # live lessons past their day, no longer given to agents
        lessons = lessons.filter(status=LessonStatus.ACTIVE, expires_on__lte=timezone.localdate())
    elif status and status != "all":
        lessons = lessons.filter(status=status)
    if q:
        lessons = lessons.filter(Q(text__icontains=q) | Q(refs__path__icontains=q)).distinct()
    if path:
        lessons = lessons.touching_path(path)
    if refs == "review":
        lessons = lessons.filter(refs__anchor__status__in=NEEDS_REVIEW).distinct()
    return (
        lessons.select_related("interaction", "superseded_by")
        .prefetch_related(_REFS_CHECKED, Prefetch("derived_from", queryset=Lesson.objects.only("id", "tier", "text")))
        .order_by("tier", "id")  # "core" sorts before "working"
    )


def cited_entries(lesson: Lesson) -> list[dict[str, Any]]:
    """The transcript entries a lesson cites, cleaned, in transcript order (empty when none are stored)."""
    from memory.pipeline.transcripts import transcript_entries

    if not lesson.source_entry_ids or lesson.interaction is None:
        return []
    wanted = {str(i) for i in lesson.source_entry_ids}
    return [e for e in transcript_entries(lesson.interaction.transcript) if e["id"] in wanted]


def lesson_with_context(lesson_id: int) -> Lesson:
    return (
        Lesson.objects.select_related("memory__persona", "memory__project", "interaction", "superseded_by")
        .prefetch_related(_REFS_CHECKED, Prefetch("derived_from", queryset=Lesson.objects.only("id", "tier", "text")))
        .get(pk=lesson_id)
    )


# --- history ---------------------------------------------------------------------------------


def memory_batches(memory: Memory, changes_per_batch: int | None = None) -> QuerySet[ChangeBatch]:
    """Batches newest first, each with `first_changes`: its first `changes_per_batch` (all when None); paginate."""
    # The page names a change's lesson and what reverted it by id only, so nothing is joined: a join
    # to the lessons let PostgreSQL hash every lesson of the store to find a page's few hundred, and one
    # to "the batch this one reverts" let SQLite (told by ANALYZE that nearly every reverted_by is
    # NULL) read every batch for each row.
    changes = Change.objects.order_by("id")
    if changes_per_batch is not None:
        changes = changes[:changes_per_batch]  # one windowed query for the page's batches
    return (
        ChangeBatch.objects.filter(memory=memory)
        .select_related("actor_user")
        .prefetch_related(Prefetch("changes", queryset=changes, to_attr="first_changes"))
        .order_by("-created_at", "-id")
    )


def change_counts(batches: Iterable[ChangeBatch]) -> dict[int, int]:
    """{batch id: its number of changes} for `batches` (one page), counted by the database."""
    return dict(
        Change.objects.filter(batch_id__in=[b.pk for b in batches])
        .order_by()
        .values_list("batch_id")
        .annotate(n=Count("id"))
    )


def lesson_changes(lesson: Lesson) -> QuerySet[Change]:
    return (
        Change.objects.filter(lesson=lesson)
        .select_related("batch__actor_user", "batch__reverted_by", "reverted_by")
        .order_by("-created_at", "-id")
    )
