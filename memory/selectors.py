"""Reads: compiled memory and the queries the pages and the API share."""

from dataclasses import dataclass, field

from django.core.cache import cache
from django.db.models import Prefetch

from memory.formats.lines import lesson_line, render_core, render_working, section_header
from memory.models import Lesson, LessonRef, LessonStatus, Memory, Tier

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
    core_cut: list = field(default_factory=list)
    working_kept: list = field(default_factory=list)
    working_cut: list = field(default_factory=list)
    core_chars: int = 0
    working_chars: int = 0
    core_budget: int = 0
    working_budget: int = 0

    @property
    def is_empty(self):
        return not self.text


def compile_memory(memory):
    """`## Core Lessons` then `## Working Memory`, each within its budget, cut at lesson boundaries.

    Core keeps its first lessons, working its most recent. An empty memory compiles to "" so a
    persona without memory gets exactly its prompt.
    """
    core = with_refs(active_lessons(memory, Tier.CORE))
    working = with_refs(active_lessons(memory, Tier.WORKING))
    core_ids = _select_within_budget(core, memory.core_char_budget, _line_cost)
    working_ids = _select_within_budget(list(reversed(working)), memory.working_char_budget, _working_cost)
    core_kept = [(l, r) for l, r in core if l.pk in core_ids]
    working_kept = [(l, r) for l, r in working if l.pk in working_ids]
    core_text = render_core(core_kept)
    working_text = render_working(working_kept)
    if core_kept or working_kept:
        text = f"{CORE_HEADING}\n{core_text}\n{WORKING_HEADING}\n{working_text}".rstrip("\n") + "\n"
    else:
        text = ""
    return CompiledMemory(
        text=text,
        core_kept=[l.pk for l, _ in core_kept],
        core_cut=[l.pk for l, _ in core if l.pk not in core_ids],
        working_kept=[l.pk for l, _ in working_kept],
        working_cut=[l.pk for l, _ in working if l.pk not in working_ids],
        core_chars=len(core_text),
        working_chars=len(working_text),
        core_budget=memory.core_char_budget,
        working_budget=memory.working_char_budget,
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
