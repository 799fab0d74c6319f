"""Reads: compiled memory and the queries the pages and the API share."""

from collections import defaultdict
from dataclasses import dataclass, field
from functools import cached_property

from django.core.cache import cache
from django.db.models import Prefetch, Q

from memory.formats.lines import lesson_line, render_core, render_working, section_header, working_order
from memory.models import Lesson, LessonRef, LessonStatus, Memory, Relevance, Tier
from memory.refs import Ref

CORE_HEADING = "## Core Lessons"
WORKING_HEADING = "## Working Memory"


def active_lessons(memory, tier):
    """Active lessons of one tier in file order, refs prefetched."""
    return list(
        Lesson.objects.filter(memory=memory, tier=tier, status=LessonStatus.ACTIVE)
        .prefetch_related(Prefetch("refs", queryset=LessonRef.objects.order_by("position", "id")))
        .order_by("id")
    )


def with_refs(lessons):
    return [(lesson, list(lesson.refs.all())) for lesson in lessons]


def _select_within_budget(items, budget, cost):
    """Pick lessons in the given priority order until the budget is spent.

    Must-keep lessons (protected, critical) are reserved first, so a budget never cuts them,
    even when they alone exceed it. Returns the set of kept lesson ids.
    """
    kept = {lesson.pk for lesson, refs in items if lesson.is_must_keep}
    spent = sum(cost(lesson, refs) for lesson, refs in items if lesson.pk in kept)
    for lesson, refs in items:
        if lesson.pk in kept:
            continue
        c = cost(lesson, refs)
        if spent + c > budget:
            # Cut at a lesson boundary; nothing past the first cut is taken, so the kept
            # lessons stay a contiguous run (oldest core / newest working) plus must-keeps.
            break
        kept.add(lesson.pk)
        spent += c
    return kept


def _line_cost(lesson, refs):
    return len(lesson_line(lesson, refs)) + 1


def _working_cost(lesson, refs):
    # A section header may be added per lesson in the worst case; counting it keeps us under budget.
    return _line_cost(lesson, refs) + len(section_header(lesson.lesson_date, lesson.category)) + 2


@dataclass
class CompiledMemory:
    text: str
    core_kept: list = field(default_factory=list)
    working_kept: list = field(default_factory=list)
    core_chars: int = 0
    working_chars: int = 0
    core_budget: int = 0
    working_budget: int = 0
    # (core ids cut, working ids cut), read only when asked: listing every cut id of a large
    # memory costs more than compiling it.
    load_cut: object = field(default=None, repr=False, compare=False)

    @property
    def is_empty(self):
        return not self.text

    @cached_property
    def _cut(self):
        return self.load_cut() if self.load_cut else ([], [])

    @property
    def core_cut(self):
        return self._cut[0]

    @property
    def working_cut(self):
        return self._cut[1]


# Lessons are read in pages from the kept end of each tier: a budget holds tens of lessons, a
# memory may hold tens of thousands, and compiling runs on every agent turn. The first page is
# sized for short lines (~40 characters), so one page nearly always fills the budget and the query
# count stays the same however large the memory; later pages double.
def _first_page(budget):
    return max(50, budget // 40)


# Only what rendering and budgeting read, as light rows (attribute access like a Lesson, no
# model instances): compiling runs on every agent turn, exporting reads every lesson.
LESSON_ROW_FIELDS = ("id", "tier", "category", "text", "relevance", "protected", "lesson_date", "section",
                     "unparsed", "raw_line")


def lesson_rows_with_refs(queryset):
    """[(row, [Ref…])] for a Lesson queryset: one query for the lessons, one for all their refs."""
    lessons = list(queryset.values_list(*LESSON_ROW_FIELDS, named=True))
    if not lessons:
        return []
    refs = defaultdict(list)
    rows = (
        LessonRef.objects.filter(lesson_id__in=[lesson.id for lesson in lessons])
        .order_by("lesson_id", "position", "id")
        .values_list("lesson_id", "path", "start_line", "end_line")
    )
    for lesson_id, path, start, end in rows:
        refs[lesson_id].append(Ref(path, start, end))
    return [(lesson, refs.get(lesson.id, [])) for lesson in lessons]


def _pick_within_budget(memory, tier, must_keep, budget, cost, newest_first):
    """Must-keep lessons of the tier, then lessons in priority order up to the first that does not fit.

    The same choice as `_select_within_budget` over the whole tier, reading only the pages it needs.
    """
    kept = {lesson.id: (lesson, refs) for lesson, refs in must_keep if lesson.tier == tier}
    spent = sum(cost(lesson, refs) for lesson, refs in kept.values())
    queryset = Lesson.objects.filter(memory=memory, tier=tier, status=LessonStatus.ACTIVE)
    queryset = queryset.order_by("-id" if newest_first else "id")
    after, size = None, _first_page(budget)
    while True:
        page = queryset
        if after is not None:
            page = queryset.filter(id__lt=after) if newest_first else queryset.filter(id__gt=after)
        items = lesson_rows_with_refs(page[:size])
        for lesson, refs in items:
            if lesson.id in kept:
                continue
            c = cost(lesson, refs)
            if spent + c > budget:
                # Cut at a lesson boundary; nothing past the first cut is taken, so the kept
                # lessons stay a contiguous run (oldest core / newest working) plus must-keeps.
                return kept
            kept[lesson.id] = (lesson, refs)
            spent += c
        if len(items) < size:
            return kept
        after, size = items[-1][0].id, size * 2


def compile_memory(memory):
    """`## Core Lessons` then `## Working Memory`, each within its budget, cut at lesson boundaries.

    Core keeps its first lessons, working its most recent; protected and critical lessons are
    always kept. An empty memory compiles to "" so a persona without memory gets exactly its prompt.
    """
    active = Lesson.objects.filter(memory=memory, status=LessonStatus.ACTIVE)
    must_keep = lesson_rows_with_refs(
        active.filter(Q(protected=True) | Q(relevance=Relevance.CRITICAL)).order_by("id")
    )
    core = _pick_within_budget(memory, Tier.CORE, must_keep, memory.core_char_budget, _line_cost, False)
    working = _pick_within_budget(memory, Tier.WORKING, must_keep, memory.working_char_budget, _working_cost, True)
    core_kept = [core[pk] for pk in sorted(core)]
    working_kept = working_order([working[pk] for pk in sorted(working)])
    core_text = render_core(core_kept)
    working_text = render_working(working_kept)
    if core_kept or working_kept:
        text = f"{CORE_HEADING}\n{core_text}\n{WORKING_HEADING}\n{working_text}".rstrip("\n") + "\n"
    else:
        text = ""

    def load_cut():  # read when first asked for, so it reflects the memory at that moment
        core_cut, working_cut = [], []
        for pk, tier in active.order_by("id").values_list("id", "tier"):
            if tier == Tier.CORE:
                if pk not in core:
                    core_cut.append(pk)
            elif pk not in working:
                working_cut.append(pk)
        return core_cut, working_cut

    return CompiledMemory(
        text=text,
        core_kept=[l.id for l, _ in core_kept],
        working_kept=[l.id for l, _ in working_kept],
        core_chars=len(core_text),
        working_chars=len(working_text),
        core_budget=memory.core_char_budget,
        working_budget=memory.working_char_budget,
        load_cut=load_cut,
    )


def compiled_memory_text(memory):
    """Compiled memory text, cached per memory version (every mutation bumps the version)."""
    key = f"nw:compiled:{memory.pk}:{memory.version}"
    text = cache.get(key)
    if text is None:
        text = compile_memory(memory).text
        cache.set(key, text, timeout=24 * 3600)
    return text


def memory_for(persona, project):
    return Memory.objects.filter(persona=persona, project=project).first()
