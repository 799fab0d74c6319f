"""Reads of the compaction feature: the review of one proposal (summary, lesson view, text diff) and lists."""

import difflib
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from types import SimpleNamespace
from typing import Any

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db.models import Case, Count, F, Prefetch, QuerySet, Value, When
from django.utils.html import format_html_join
from django.utils.safestring import SafeString

from memory.access import scope, visible_memories
from memory.formats.lines import render_working
from memory.models import (
    ALL_CATEGORIES,
    CompactionProposal,
    Lesson,
    LessonRef,
    LessonStatus,
    Memory,
    ProposalDrop,
    ProposalLine,
    Tier,
)
from memory.refs import Ref, parse_ref
from memory.selectors import active_lessons, with_refs

KEPT = "kept"


@dataclass
class WorkingBudget:
    """Working memory's size against its limits (lines and characters of working.md)."""

    lessons: int
    chars: int
    max_lines: int
    char_budget: int

    @property
    def over_lines(self) -> bool:
        return self.lessons > self.max_lines

    @property
    def over_chars(self) -> bool:
        return self.chars > self.char_budget

    @property
    def over(self) -> bool:
        return self.over_lines or self.over_chars


def working_budget(memory: Memory, lessons: list[Lesson] | None = None) -> WorkingBudget:
    """WorkingBudget of `memory` now (or of `lessons`, active working lessons with refs prefetched)."""
    lessons = active_lessons(memory, Tier.WORKING) if lessons is None else lessons
    return WorkingBudget(
        lessons=len(lessons),
        chars=len(render_working(with_refs(lessons))),
        max_lines=memory.max_working_lines,
        char_budget=memory.working_char_budget,
    )


def appended_since(proposal: CompactionProposal) -> list[Lesson]:
    """Active working lessons the proposal does not cover (appended, or restored, since): kept as they are."""
    return list(
        Lesson.objects.filter(memory_id=proposal.memory_id, tier=Tier.WORKING, status=LessonStatus.ACTIVE)
        .exclude(pk__in=proposal.input_lesson_ids)
        .prefetch_related(Prefetch("refs", queryset=LessonRef.objects.order_by("position", "id"), to_attr="ref_list"))
        .order_by("id")
    )


@dataclass
class CategoryRow:
    category: str
    before: int
    after: int

    @property
    def delta(self) -> int:
        return self.after - self.before


@dataclass
class LineView:
    line: ProposalLine
    sources: list[Lesson]
    missing_ids: list[int]


@dataclass
class ProposalReview:
    proposal: CompactionProposal
    lines: list[LineView]
    drops: list[ProposalDrop]
    before_text: str
    after_text: str
    lines_before: int
    lines_after: int
    categories: list[CategoryRow]
    diff: list[tuple[str, str]] = field(default_factory=list)
    diff_html: str = ""
    kind_counts: dict[str, int] = field(default_factory=dict)
    inputs_by_id: Mapping[int, Lesson] = field(default_factory=dict)

    @property
    def chars_before(self) -> int:
        return len(self.before_text)

    @property
    def chars_after(self) -> int:
        return len(self.after_text)

    @property
    def dropped_with_refs(self) -> int:
        return sum(1 for d in self.drops if d.had_refs)


def proposal_for_review(pk: int) -> CompactionProposal:
    return (
        CompactionProposal.objects.select_related(
            "memory__persona", "memory__project", "created_by", "decided_by", "apply_batch__reverted_by"
        )
        .prefetch_related("lines", Prefetch("drops", queryset=ProposalDrop.objects.order_by("lesson_id")))
        .get(pk=pk)
    )


def _refs_of(line: ProposalLine) -> list[Ref]:
    refs = []
    for text in line.refs:
        try:
            refs.append(parse_ref(text))
        except ValidationError:
            continue
    return refs


def proposed_working_text(lines: Sequence[ProposalLine], inputs_by_id: dict[int, Any]) -> str:
    """working.md as it will read once the proposal is applied (input lessons carry `ref_list`).

    Mirrors compaction_apply: kept lessons stay where they are; every other line becomes a new
    lesson after them in proposal order, dated like its newest source, in the last section of the
    lessons it compacts (so before anything appended since).
    """
    section = max((lesson.section for lesson in inputs_by_id.values()), default=0)
    kept_ids = {line.source_ids[0] for line in lines if line.kind == KEPT and line.source_ids[0] in inputs_by_id}
    items: list[tuple[Any, list[Any]]] = [(inputs_by_id[i], inputs_by_id[i].ref_list) for i in sorted(kept_ids)]
    for line in lines:
        if line.kind == KEPT and line.source_ids[0] in inputs_by_id:
            continue
        dates = [inputs_by_id[i].lesson_date for i in line.source_ids if i in inputs_by_id]
        pseudo = SimpleNamespace(
            unparsed=False,
            tier=Tier.WORKING,
            category=line.category,
            text=line.text,
            lesson_date=max(dates) if dates else date.today(),
            section=section,
        )
        items.append((pseudo, _refs_of(line)))
    return render_working(items)


def unified_diff_html(rows: Iterable[tuple[str, str]]) -> SafeString:
    """The diff rows as HTML spans. format_html_join escapes every text (lesson text is untrusted)."""
    return format_html_join("", '<span class="diff-{}">{}</span>', rows)


def unified_diff(before: str, after: str) -> list[tuple[str, str]]:
    """(css class, text) per line of a unified diff of working.md."""
    rows = []
    for text in difflib.unified_diff(
        before.splitlines(), after.splitlines(), "working.md (now)", "working.md (proposed)", lineterm="", n=2
    ):
        if text.startswith(("---", "+++")):
            cls = "file"
        elif text.startswith("@@"):
            cls = "hunk"
        elif text.startswith("+"):
            cls = "add"
        elif text.startswith("-"):
            cls = "del"
        else:
            cls = "ctx"
        rows.append((cls, text))
    return rows


def proposal_review(proposal: CompactionProposal) -> ProposalReview:
    """Everything the review page shows, in a fixed number of queries whatever the memory's size."""
    # to_attr: a plain list per lesson; a related manager per lesson costs more than the query itself.
    inputs = list(
        Lesson.objects.filter(pk__in=proposal.input_lesson_ids)
        .prefetch_related(Prefetch("refs", queryset=LessonRef.objects.order_by("position", "id"), to_attr="ref_list"))
        .order_by("id")
    )
    inputs_by_id = {lesson.pk: lesson for lesson in inputs}
    lines = sorted(proposal.lines.all(), key=lambda line: line.position)
    drops = list(proposal.drops.all())
    for drop in drops:
        # The lesson from the inputs already read (None if it is gone), so the page reads no more.
        drop.lesson = inputs_by_id.get(drop.lesson_id)  # type: ignore[assignment]
    if proposal.trigger == CompactionProposal.Trigger.PRUNING and drops:
        # A pruning proposal is judged by what else still holds each dropped observation.
        from memory.pipeline.coverage import coverage_counts, coverage_tag

        counts = coverage_counts(proposal.memory, [d.lesson_id for d in drops])
        for drop in drops:
            drop.coverage = coverage_tag(counts.get(drop.lesson_id, 0))  # type: ignore[attr-defined]  # for the page
            drop.coverage_count = counts.get(drop.lesson_id, 0)  # type: ignore[attr-defined]
    line_views = [
        LineView(
            line=line,
            sources=[inputs_by_id[i] for i in line.source_ids if i in inputs_by_id],
            missing_ids=[i for i in line.source_ids if i not in inputs_by_id],
        )
        for line in lines
    ]
    after_text = proposed_working_text(lines, inputs_by_id)
    diff = unified_diff(proposal.before_text, after_text)
    before_counts = Counter(lesson.category or "untagged" for lesson in inputs)
    after_counts = Counter(line.category for line in lines)
    names = [c for c in ALL_CATEGORIES if before_counts[c] or after_counts[c]]
    names += sorted((set(before_counts) | set(after_counts)) - set(names))
    return ProposalReview(
        proposal=proposal,
        lines=line_views,
        drops=drops,
        before_text=proposal.before_text,
        after_text=after_text,
        lines_before=len(inputs),
        lines_after=len(lines),
        categories=[CategoryRow(c, before_counts[c], after_counts[c]) for c in names],
        diff=diff,
        diff_html=unified_diff_html(diff),
        kind_counts=Counter(line.kind for line in lines),
        inputs_by_id=inputs_by_id,
    )


def proposals_for_list(*, user: User) -> QuerySet[CompactionProposal]:
    """Proposals for triage: pending ones first, the longest waiting on top, then the others newest first."""
    pending = CompactionProposal.Status.PENDING
    return (
        scope(CompactionProposal.objects.all(), user)
        .select_related("memory__persona", "memory__project", "decided_by")
        .annotate(
            waiting_rank=Case(When(status=pending, then=Value(0)), default=Value(1)),
            waiting_since=Case(When(status=pending, then=F("created_at"))),
        )
        .order_by("waiting_rank", "waiting_since", "-created_at", "-id")
    )


def with_line_counts(proposals: Iterable[CompactionProposal]) -> list[CompactionProposal]:
    """`proposals` (one page) each given `line_count`, counted by the database for these ids only."""
    proposals = list(proposals)
    counts = dict(
        ProposalLine.objects.filter(proposal_id__in=[p.pk for p in proposals])
        .order_by()
        .values_list("proposal_id")
        .annotate(n=Count("id"))
    )
    for proposal in proposals:
        proposal.line_count = counts.get(proposal.pk, 0)  # type: ignore[attr-defined]  # set for the page only
    return proposals


def memories_for_list(*, user: User) -> QuerySet[Memory]:
    return visible_memories(user).select_related("persona", "project").order_by("persona__name", "project__name", "id")


def with_working_counts(memories: Iterable[Memory]) -> list[Memory]:
    """`memories` (one page) each given `working_count` and `pending_count`: two grouped counts over their ids."""
    memories = list(memories)
    ids = [m.pk for m in memories]
    working = dict(
        Lesson.objects.filter(memory_id__in=ids, status=LessonStatus.ACTIVE, tier=Tier.WORKING)
        .order_by()
        .values_list("memory_id")
        .annotate(n=Count("id"))
    )
    pending = dict(
        CompactionProposal.objects.filter(memory_id__in=ids, status=CompactionProposal.Status.PENDING)
        .order_by()
        .values_list("memory_id")
        .annotate(n=Count("id"))
    )
    for memory in memories:
        memory.working_count = working.get(memory.pk, 0)  # type: ignore[attr-defined]  # set for the page only
        memory.pending_count = pending.get(memory.pk, 0)  # type: ignore[attr-defined]
    return memories


def working_lessons(memory: Memory) -> list[Lesson]:
    return active_lessons(memory, Tier.WORKING)


def compaction_needed(memory: Memory, lessons: list[Lesson] | None = None) -> str:
    """Why working memory needs compacting ('' when it does not): over its line limit or its char budget."""
    budget = working_budget(memory, lessons)
    if budget.over_lines:
        return f"{budget.lessons} working lessons, over the limit of {budget.max_lines}"
    if budget.over_chars:
        return f"working.md is {budget.chars} characters, over the budget of {budget.char_budget}"
    return ""


def over_limits_explanation(memory: Memory) -> str:
    """Why working memory is still over its limits after a compaction ('' when it is within them)."""
    lessons = working_lessons(memory)
    detail = compaction_needed(memory, lessons)
    if not detail:
        return ""
    why = [
        f"a compaction aims at {memory.compaction_target_lines} lines; it does not shorten lines to fit the "
        f"{memory.working_char_budget}-character budget"
    ]
    must_keep = [lesson for lesson in lessons if lesson.is_must_keep]
    if must_keep:
        chars = len(render_working(with_refs(must_keep)))
        why.append(
            f"{len(must_keep)} protected or critical lesson{'s' if len(must_keep) != 1 else ''} "
            f"({chars} characters) are never dropped"
        )
    applied = (
        CompactionProposal.objects.filter(memory=memory, status=CompactionProposal.Status.APPLIED)
        .order_by("-id")
        .first()
    )
    if applied is not None:
        since = (
            Lesson.objects.filter(pk__in=[lesson.pk for lesson in lessons])
            .exclude(pk__in=applied.input_lesson_ids)
            .exclude(changes__batch_id=applied.apply_batch_id)
            .count()
        )
        if since:
            why.append(
                f"{since} lesson{'s were' if since != 1 else ' was'} written after the proposal was made "
                "and kept as they are"
            )
    return f"{detail}. Why: " + "; ".join(why) + "."
