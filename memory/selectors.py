"""Reads: compiled memory and the queries the pages and the API share."""

import functools
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date
from functools import cached_property
from typing import TYPE_CHECKING, Any, NamedTuple

from django.db import connection
from django.db.models import Prefetch, Q, QuerySet
from django.utils import timezone

from memory import context_cache
from memory.conflicts import CONFLICT_MARK
from memory.formats.lines import lesson_line, render_core, render_working, section_heading, working_order
from memory.models import Lesson, LessonConflict, LessonRef, LessonStatus, Memory, Relevance, Tier
from memory.refs import Ref
from memory.refs.models import NEEDS_REVIEW, RefAnchor

if TYPE_CHECKING:
    from personas.models import Persona, Project

CORE_HEADING = "## Core Lessons"
WORKING_HEADING = "## Working Memory"


def unexpired(today: date | None = None) -> Q:
    """Lessons that have not expired: no expires_on, or one still ahead (from that day on it is gone)."""
    return Q(expires_on__isnull=True) | Q(expires_on__gt=today or timezone.localdate())


def active_lessons(memory: Memory, tier: str) -> list[Lesson]:
    """Active, unexpired lessons of one tier in file order, refs prefetched."""
    return list(
        Lesson.objects.filter(unexpired(), memory=memory, tier=tier, status=LessonStatus.ACTIVE)
        .prefetch_related(Prefetch("refs", queryset=LessonRef.objects.order_by("position", "id")))
        .order_by("id")
    )


def with_refs(lessons: Iterable[Lesson]) -> list[tuple[Lesson, list[LessonRef]]]:
    return [(lesson, list(lesson.refs.all())) for lesson in lessons]


@dataclass
class CompiledMemory:
    text: str
    core_kept: list[int] = field(default_factory=list)
    working_kept: list[int] = field(default_factory=list)
    core_chars: int = 0
    working_chars: int = 0
    core_budget: int = 0
    working_budget: int = 0
    # Kept lessons whose line carries CONFLICT_MARK (the older of a pending conflict).
    disputed: set[int] = field(default_factory=set)
    # (core ids cut, working ids cut), read only when asked: listing every cut id of a large
    # memory costs more than compiling it.
    load_cut: Callable[[], tuple[list[int], list[int]]] | None = field(default=None, repr=False, compare=False)

    @property
    def is_empty(self) -> bool:
        return not self.text

    @cached_property
    def _cut(self) -> tuple[list[int], list[int]]:
        return self.load_cut() if self.load_cut else ([], [])

    @property
    def core_cut(self) -> list[int]:
        return self._cut[0]

    @property
    def working_cut(self) -> list[int]:
        return self._cut[1]


# Lessons are read in pages from the kept end of each tier: a budget holds tens of lessons, a
# memory may hold tens of thousands, and compiling runs on every agent turn. The first page is
# sized for lines of ~80 characters (a typical lesson with a ref), so one page usually fills the
# budget and the query count stays the same however large the memory; later pages double.
def _first_page(budget: int) -> int:
    return max(50, budget // 80)


# Only what rendering and budgeting read, as light rows (attribute access like a Lesson, no
# model instances): compiling runs on every agent turn, exporting reads every lesson.
class LessonRow(NamedTuple):
    id: int
    tier: str
    category: str
    text: str
    relevance: str
    protected: bool
    lesson_date: date
    section: int
    unparsed: bool
    raw_line: str
    undated: bool
    section_heading: str


LESSON_ROW_FIELDS = LessonRow._fields
# A lesson row with its refs, in position order.
RowWithRefs = tuple[LessonRow, list[Ref]]


def lesson_rows_with_refs(queryset: QuerySet[Lesson]) -> list[tuple[Any, list[Ref]]]:
    """[(row, [Ref…])] for a Lesson queryset: one query for the lessons, one for all their refs."""
    lessons = list(queryset.values_list(*LESSON_ROW_FIELDS, named=True))
    if not lessons:
        return []
    refs: defaultdict[int, list[Ref]] = defaultdict(list)
    rows = (
        LessonRef.objects.filter(lesson_id__in=[lesson.id for lesson in lessons])
        .order_by("lesson_id", "position", "id")
        .values_list("lesson_id", "path", "start_line", "end_line", "anchor__status")
    )
    for lesson_id, path, start, end, status in rows:
        refs[lesson_id].append(Ref(path, start, end, stale=status in NEEDS_REVIEW))
    return [(lesson, refs.get(lesson.id, [])) for lesson in lessons]


_MARK_SUFFIX = " " + CONFLICT_MARK


def _disputed_text() -> str:
    """The text column with CONFLICT_MARK appended while the lesson is the older of a pending conflict
    whose newer lesson is active (what agents read; exports leave the text as it is)."""
    qn = connection.ops.quote_name
    lesson = qn(Lesson._meta.db_table)
    conflicts = qn(LessonConflict._meta.db_table)
    mark = " " + CONFLICT_MARK.replace("'", "''")
    return (
        f"CASE WHEN EXISTS (SELECT 1 FROM {conflicts} c JOIN {lesson} n ON n.id = c.newer_id "
        f"WHERE c.older_id = {lesson}.id AND c.status = 'pending' AND n.status = 'active') "
        f"THEN {lesson}.{qn('text')} || '{mark}' ELSE {lesson}.{qn('text')} END AS {qn('text')}"
    )


# On SQLite, Django registers a converter per declared column type (date: two Python calls and a
# parse) that runs on every row of the join, a lesson's refs included. Read as plain text and
# integers, the date is parsed once per lesson and the flags are made bools in _fetch_rows.
_SQLITE_PLAIN = {"lesson_date": "TEXT", "protected": "INTEGER", "unparsed": "INTEGER", "undated": "INTEGER"}


def _row_column(qn: Callable[[str], str], name: str) -> str:
    if connection.vendor == "sqlite" and name in _SQLITE_PLAIN:
        return f"CAST(l.{qn(name)} AS {_SQLITE_PLAIN[name]})"
    return f"l.{qn(name)}"


@functools.cache
def _lesson_sql(where: str, order: str, limit: bool = False, mark: bool = False) -> str:
    """Active, unexpired lessons of one memory with their refs in one statement (hand-written: the ORM's
    query building cost more than the rest of compiling). Refs come as extra rows, in position order.
    Parameters: memory id, today, then those of `where`. mark: disputed lines carry CONFLICT_MARK."""
    qn = connection.ops.quote_name
    columns = ", ".join(_row_column(qn, name) for name in LESSON_ROW_FIELDS)
    selected = ", ".join(_disputed_text() if mark and name == "text" else qn(name) for name in LESSON_ROW_FIELDS)
    inner = (
        f"SELECT {selected} FROM {qn(Lesson._meta.db_table)} "
        f"WHERE memory_id = %s AND status = 'active' AND (expires_on IS NULL OR expires_on > %s) AND {where} "
        f"ORDER BY id {order}" + (" LIMIT %s" if limit else "")
    )
    return (
        f"SELECT {columns}, r.path, r.start_line, r.end_line, a.status FROM ({inner}) l "
        f"LEFT JOIN {qn(LessonRef._meta.db_table)} r ON r.lesson_id = l.id "
        f"LEFT JOIN {qn(RefAnchor._meta.db_table)} a ON a.id = r.anchor_id "
        f"ORDER BY l.id {order}, r.position, r.id"
    )


def _fetch_rows(sql: str, params: Sequence[int | str | date]) -> list[RowWithRefs]:
    """[(LessonRow, [Ref…])] from one of the `_lesson_sql` statements, in its order."""
    out: list[RowWithRefs] = []
    refs: list[Ref] = []
    last_id = None
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        for row in cursor.fetchall():
            if row[0] != last_id:
                last_id = row[0]
                day = row[6]
                if isinstance(day, str):  # SQLite may hand back text
                    day = date.fromisoformat(day)
                refs = []
                out.append(
                    (
                        LessonRow(
                            row[0],
                            row[1],
                            row[2],
                            row[3],
                            row[4],
                            bool(row[5]),
                            day,
                            row[7],
                            bool(row[8]),
                            row[9],
                            bool(row[10]),
                            row[11],
                        ),
                        refs,
                    )
                )
            if row[12] is not None:
                refs.append(Ref(row[12], row[13], row[14], row[15] is not None and row[15] in NEEDS_REVIEW))
    return out


def _section_key(lesson: LessonRow) -> tuple[date, int, bool]:
    return (lesson.lesson_date, lesson.section, lesson.undated)


def _section_cost(lesson: LessonRow) -> int:
    """What a section adds around its lines: its header (its kept heading, or one named after its
    first lesson) and the blank line closing it; undated lessons sit bare, before a blank line."""
    return 1 if lesson.undated else len(section_heading(lesson)) + 2


def _working_gain(older: LessonRow | None, lesson: LessonRow, newer: LessonRow | None, line: int) -> int:
    """How much the working text grows when `lesson` joins the kept lessons between its kept
    neighbours `older` and `newer` (either may be None): its line, plus any section header it
    opens or moves. Lessons of one (date, section) in a row share a section, headed by the first."""
    key = _section_key(lesson)
    if older is not None and _section_key(older) == key:
        return line
    if newer is not None and _section_key(newer) == key:  # it now heads the section `newer` headed
        return line + _section_cost(lesson) - _section_cost(newer)
    gain = line + _section_cost(lesson)
    if older is not None and newer is not None and _section_key(older) == _section_key(newer):
        gain += _section_cost(newer)  # it splits a section in two
    return gain


def _pick_within_budget(
    memory: Memory, tier: str, must_keep: list[RowWithRefs], budget: int, today: date
) -> dict[int, RowWithRefs]:
    """Must-keep lessons of the tier, then lessons in priority order up to the first that does not fit.

    Core keeps its oldest lessons, working its newest. The budget is spent on exactly the text the
    kept lessons make in the tier's file (`render_core` / `render_working`), computed on lengths.
    Returns {id: (row, refs)}.
    """
    reserved = sorted(
        ((lesson, refs) for lesson, refs in must_keep if lesson.tier == tier), key=lambda item: item[0].id
    )
    kept = {lesson.id: (lesson, refs) for lesson, refs in reserved}
    core = tier == Tier.CORE
    if core:
        spent = len(render_core(reserved))
    else:
        spent = len(render_working(reserved))
        older_reserved = [lesson for lesson, _ in reserved]  # popped from the end as the walk passes them
    newer: LessonRow | None = None
    order = "ASC" if core else "DESC"
    after, size = None, _first_page(budget)
    while True:
        if after is None:
            items = _fetch_rows(_lesson_sql("tier = %s", order, True, True), [memory.pk, today, tier, size])
        else:
            where = "tier = %s AND id " + (">" if core else "<") + " %s"
            items = _fetch_rows(_lesson_sql(where, order, True, True), [memory.pk, today, tier, after, size])
        for lesson, refs in items:
            if lesson.id in kept:
                newer = lesson
                continue
            line = len(lesson_line(lesson, refs)) + 1
            if core:
                gain = line
            else:
                while older_reserved and older_reserved[-1].id > lesson.id:
                    older_reserved.pop()
                gain = _working_gain(older_reserved[-1] if older_reserved else None, lesson, newer, line)
            if spent + gain > budget:
                # Cut at a lesson boundary; nothing past the first cut is taken, so the kept
                # lessons stay a contiguous run (oldest core / newest working) plus must-keeps.
                return kept
            kept[lesson.id] = (lesson, refs)
            spent += gain
            newer = lesson
        if len(items) < size:
            return kept
        after, size = items[-1][0].id, size * 2


def active_lesson_rows(memory: Memory) -> list[RowWithRefs]:
    """[(row, [Ref…])] of every active, unexpired lesson of a memory in file order, in one query (exporting)."""
    return _fetch_rows(_lesson_sql("1 = 1", "ASC"), [memory.pk, timezone.localdate()])


def _must_keep(memory: Memory, today: date) -> list[RowWithRefs]:
    # Spelled as the partial index `lesson_must_keep` is, so the database reads only must-keeps.
    return _fetch_rows(_lesson_sql("(protected OR relevance = 'critical')", "ASC", False, True), [memory.pk, today])


def compile_memory(memory: Memory) -> CompiledMemory:
    """`## Core Lessons` then `## Working Memory`, each within its budget, cut at lesson boundaries.

    Within budget the text is exactly what Night Watch makes of the exported core.md and working.md
    (`## Core Lessons\n{core}\n## Working Memory\n{working}`); over budget, core keeps its first
    lessons and working its most recent, whole, and protected and critical lessons are always kept.
    An empty memory compiles to "" so a persona without memory gets exactly its prompt.
    """
    today = timezone.localdate()
    must_keep = _must_keep(memory, today)
    core = _pick_within_budget(memory, Tier.CORE, must_keep, memory.core_char_budget, today)
    working = _pick_within_budget(memory, Tier.WORKING, must_keep, memory.working_char_budget, today)
    core_kept = [core[pk] for pk in sorted(core)]
    working_kept = working_order([working[pk] for pk in sorted(working)])
    core_text = render_core(core_kept)
    working_text = render_working(working_kept)
    # The walk counts sections in id order; a compaction's lines keep the section of the lessons
    # they replaced and so sit earlier in the file. Whatever the order, never go past the budget.
    while len(working_text) > memory.working_char_budget:
        droppable = [
            lesson.id for lesson, _ in working_kept if not (lesson.protected or lesson.relevance == Relevance.CRITICAL)
        ]
        if not droppable:
            break
        del working[min(droppable)]
        working_kept = working_order([working[pk] for pk in sorted(working)])
        working_text = render_working(working_kept)
    if core_kept or working_kept:
        text = f"{CORE_HEADING}\n{core_text}\n{WORKING_HEADING}\n{working_text}"
    else:
        text = ""

    def load_cut() -> tuple[list[int], list[int]]:  # read when first asked for: the memory at that moment
        core_cut: list[int] = []
        working_cut: list[int] = []
        active = Lesson.objects.filter(unexpired(today), memory=memory, status=LessonStatus.ACTIVE)
        for pk, tier in active.order_by("id").values_list("id", "tier"):
            if tier == Tier.CORE:
                if pk not in core:
                    core_cut.append(pk)
            elif pk not in working:
                working_cut.append(pk)
        return core_cut, working_cut

    return CompiledMemory(
        text=text,
        core_kept=[lesson.id for lesson, _ in core_kept],
        working_kept=[lesson.id for lesson, _ in working_kept],
        core_chars=len(core_text),
        working_chars=len(working_text),
        core_budget=memory.core_char_budget,
        working_budget=memory.working_char_budget,
        load_cut=load_cut,
        disputed={row.id for row, _ in core_kept + working_kept if row.text.endswith(_MARK_SUFFIX)},
    )


def compiled_memory_text(memory: Memory) -> str:
    """Compiled memory text, cached per memory version (every mutation bumps the version)."""
    key = context_cache.compiled_key(memory)
    store = context_cache.local()
    text = store.get(key)
    if text is None:
        text = compile_memory(memory).text
        store.set(key, text, timeout=context_cache.COMPILED_SECONDS)
    return text


def memory_for(persona: "Persona", project: "Project") -> Memory | None:
    return Memory.objects.filter(persona=persona, project=project).first()
