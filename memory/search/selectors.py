"""The ranked read: lessons matching a query and filters, among those a person (or a token) may see.

The database's own full-text engine ranks (SQLite FTS5 bm25, PostgreSQL ts_rank over the
generated tsvector); see memory/search/index.py for how the index is kept.
"""

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import date
from typing import Any

from django.db import OperationalError, connection, transaction
from django.db.models import QuerySet
from django.utils import timezone

from memory.access import scope
from memory.models import Lesson, LessonRef, LessonStatus, Memory
from memory.search import index
from memory.search.highlight import highlight
from memory.search.prefixes import widespread
from memory.search.terms import Query, fts5_match, parse, pg_prefix_tsquery, prefix_words
from personas.models import Persona, Project, Team

PAGE_SIZE = 20
RELAXED_TIME_LIMIT_MS = 3000
FACET_SIZE = 20  # teams or personas listed with their counts, the largest first
# Statuses a search shows when none is asked for: everything but the deleted.
LIVE_STATUSES = [LessonStatus.ACTIVE, LessonStatus.PROMOTED, LessonStatus.SUPERSEDED]
EXPIRED = "expired"


@dataclass
class Filters:
    team: int | None = None
    persona: int | None = None
    project: int | None = None
    tier: str = ""
    category: str = ""
    status: str = ""
    since: date | None = None
    until: date | None = None
    ref: str = ""


@dataclass
class Hit:
    lesson: Lesson
    html: str  # the text, escaped, with the matching words marked


@dataclass
class Results:
    query: Query
    count: int = 0
    hits: list[Hit] = field(default_factory=list)
    teams: list[dict[str, Any]] = field(default_factory=list)
    personas: list[dict[str, Any]] = field(default_factory=list)
    more_teams: int = 0  # how many teams and personas with matches the lists leave out
    more_personas: int = 0
    relaxed: bool = False  # no lesson held every term: these hold some of them (Query.relaxed)
    too_broad: bool = False  # ... and too many held some of them to rank within RELAXED_TIME_LIMIT_MS


def matching(lessons: QuerySet[Lesson], query: Query) -> QuerySet[Lesson]:
    """The lessons matching the query (all of them for an empty query: the filters alone choose)."""
    if not query:
        return lessons
    if connection.vendor == "sqlite":
        expr = fts5_match(settled(query))
        lessons = lessons.extra(
            tables=[index.FTS_TABLE],
            where=[f"{index.FTS_TABLE}.rowid = memory_lesson.id", f"{index.FTS_TABLE} MATCH %s"],
            params=[expr],
        )
    else:
        tsquery, params = _pg_tsquery(query)
        lessons = lessons.extra(where=[f"memory_lesson.search_vector @@ {tsquery}"], params=params)
    for code, negated in query.codes:
        # Code must appear as written; the index found the candidates by its words.
        lessons = lessons.exclude(text__icontains=code) if negated else lessons.filter(text__icontains=code)
    return lessons


def ranked(lessons: QuerySet[Lesson], query: Query) -> QuerySet[Lesson]:
    """`matching(...)` in order: best first (newest first when there are no words)."""
    if not query:
        return lessons.order_by("-lesson_date", "-id")
    if connection.vendor == "sqlite":
        rank = f"bm25({index.FTS_TABLE}, 2.0, 1.0)"  # lower is better; a word as written counts double
        return lessons.extra(select={"search_rank": rank}, order_by=["search_rank", "-id"])
    tsquery, params = _pg_tsquery(query)
    rank = f"-ts_rank(memory_lesson.search_vector, {tsquery})"
    return lessons.extra(select={"search_rank": rank}, select_params=params, order_by=["search_rank", "-id"])


def settled(query: Query) -> Query:
    """The query with the words too widespread to ask for as prefixes settled (memory/search/prefixes.py):
    once, however many statements then read it."""
    if query.whole is not None:
        return query
    return replace(query, whole=widespread(prefix_words(query)))


def every_prefix(query: Query) -> Query | None:
    """The query asking for every word's longer words after all, when it left some out (None if not):
    what a search asks when the narrower one finds nothing ("Datenbank" for a lesson holding only
    "Datenbankverbindungen", in a store where "datenbank" starts words in thousands of lessons)."""
    return replace(query, whole=frozenset()) if settled(query).whole else None


def _pg_tsquery(query: Query) -> tuple[str, list[str]]:
    """The query's tsquery expression and its parameters.

    A relaxed query is its terms' readings or-ed, without the words as prefixes: every lesson holding
    any term is ranked, and at a million lessons the index's prefix matching of several common words
    doubled that. websearch_to_tsquery would bind an exclusion to the last term only ("a or b -c" is
    a | (b & !c)), so what a relaxed query excludes is taken from the whole: (readings && !!excluded)."""
    text = [_pg_text(query.text)] * len(index.PG_CONFIGS)
    if not query.any_term:
        return index.PG_TSQUERY, [*text, pg_prefix_tsquery(settled(query))]
    if not query.negated_text:
        return index.PG_READINGS, text
    excluded = [_pg_text(query.negated_text)] * len(index.PG_CONFIGS)
    return f"({index.PG_READINGS} && !!{index.PG_READINGS})", text + excluded


def _pg_text(text: str) -> str:
    return text.replace("<", " ").replace(">", " ")  # as the indexed text (index.PG_VECTOR)


def filtered(lessons: QuerySet[Lesson], filters: Filters) -> QuerySet[Lesson]:
    if filters.team is not None:
        lessons = lessons.filter(memory__project__team_id=filters.team)
    if filters.persona is not None:
        lessons = lessons.filter(memory__persona_id=filters.persona)
    if filters.project is not None:
        lessons = lessons.filter(memory__project_id=filters.project)
    if filters.tier:
        lessons = lessons.filter(tier=filters.tier)
    if filters.category:
        lessons = lessons.filter(category=filters.category)
    if filters.status == EXPIRED:  # not a status of its own: a live lesson past its expires_on date
        lessons = lessons.filter(status__in=LIVE_STATUSES, expires_on__lte=timezone.localdate())
    elif filters.status:
        lessons = lessons.filter(status=filters.status)
    else:
        lessons = lessons.filter(status__in=LIVE_STATUSES)
    if filters.since:
        lessons = lessons.filter(lesson_date__gte=filters.since)
    if filters.until:
        lessons = lessons.filter(lesson_date__lte=filters.until)
    if filters.ref:
        lessons = lessons.filter(pk__in=_refs_under(filters.ref).values("lesson_id"))
    return lessons


def _refs_under(prefix: str) -> QuerySet[LessonRef]:
    """Refs whose path starts with `prefix`. On SQLite a range on the path as well, which its index
    answers (SQLite's LIKE, case-insensitive, cannot use it); the LIKE keeps the case exact."""
    refs = LessonRef.objects.filter(path__startswith=prefix)
    if connection.vendor == "sqlite":
        refs = refs.filter(path__gte=prefix, path__lt=prefix + "\U0010ffff")
    return refs


def search(user: Any, q: str, filters: Filters, *, page: int = 1) -> Results:
    """One page of the lessons `user` may see matching `q` and the filters, with team and persona counts.

    Three queries (plus, once per request, the user's memberships for the scope): the summary, which
    finds the matching lessons once (a materialised CTE) and reads from that set the count, the counts
    per team and per persona and the page's ids in rank order; the page's lessons; their refs. When
    no lesson holds every term, the summary is asked once more of the relaxed query: four queries.
    (And first, if the query left a widespread word's longer words out, once more with them.)"""
    query = parse(q)
    results = Results(query)
    if (query.text and not query) or (not query.text and not any_filter(filters)):
        return results  # only operators or exclusions, or nothing asked at all
    visible = filtered(scope(Lesson.objects.all(), user), filters)
    offset = (page - 1) * PAGE_SIZE
    query = settled(query)
    ids, teams, personas = _summary(matching(visible, query), query, offset=offset)
    results.count = sum(n for _, _, n in teams)
    if not results.count and (wider := every_prefix(query)) is not None:
        query = wider
        ids, teams, personas = _summary(matching(visible, query), query, offset=offset)
        results.count = sum(n for _, _, n in teams)
    if not results.count and (relaxed := query.relaxed()) is not None:
        # No lesson holds every term: the lessons holding some of them, those with the most first.
        # Every lesson holding any term is ranked, so common words over a large store are given a
        # time limit; past it the page asks for more precise words rather than wait.
        results.relaxed, query = True, relaxed
        try:
            with time_limit(RELAXED_TIME_LIMIT_MS):
                ids, teams, personas = _summary(matching(visible, relaxed), relaxed, offset=offset)
        except OperationalError:
            results.too_broad = True
            return results
        results.count = sum(n for _, _, n in teams)
    if not results.count:
        return results
    results.teams, results.more_teams = _facet(teams)
    results.personas, results.more_personas = _facet(personas)
    if ids:
        rows = Lesson.objects.filter(pk__in=ids).select_related("memory__persona", "memory__project")
        by_id = {lesson.pk: lesson for lesson in rows.prefetch_related("refs")}
        results.hits = [Hit(by_id[pk], highlight(by_id[pk].text, query)) for pk in ids if pk in by_id]
    return results


@contextmanager
def time_limit(ms: int) -> Iterator[None]:
    """Statements run inside stop with OperationalError after `ms` milliseconds: PostgreSQL's
    statement_timeout for the enclosing transaction, SQLite's progress handler (which interrupts)."""
    if connection.vendor == "postgresql":
        # Local to the transaction (a savepoint inside a request's or a test's), and put back after:
        # a timeout rolls the savepoint back, and the setting with it.
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(
                "SELECT current_setting('statement_timeout'), set_config('statement_timeout', %s, true)", [str(ms)]
            )
            before = cursor.fetchone()[0]
            yield
            cursor.execute("SELECT set_config('statement_timeout', %s, true)", [before])
        return
    connection.ensure_connection()
    raw = connection.connection
    deadline = time.monotonic() + ms / 1000
    raw.set_progress_handler(lambda: time.monotonic() > deadline, 10_000)
    try:
        yield
    finally:
        raw.set_progress_handler(None, 0)


def _facet(rows: list[tuple[int | None, str | None, int]]) -> tuple[list[dict[str, Any]], int]:
    """The largest FACET_SIZE counts, largest first (then by name), and how many were left out."""
    rows = sorted(rows, key=lambda row: (-row[2], row[1] or "", row[0] or 0))
    return [{"id": pk, "name": name, "n": n} for pk, name, n in rows[:FACET_SIZE]], max(0, len(rows) - FACET_SIZE)


def _summary(lessons: QuerySet[Lesson], query: Query, *, offset: int) -> tuple[list[int], list, list]:
    """(the page's lesson ids in order, [(team id, name, count)], [(persona id, name, count)]) in one query.

    The match set (id, memory, the rank or the date) is computed once; the database reads every
    figure from it, so the words are looked up in the index once however many figures the page shows."""
    if query:
        rank, order = "search_rank", "search_rank, id DESC"  # bm25 and -ts_rank: lower is better
        lessons = ranked(lessons, query)
    else:
        rank, order = "lesson_date", "lesson_date DESC, id DESC"
    columns = ["id", "memory_id", rank]  # search_rank is ranked()'s extra select
    sql, params = lessons.values_list(*columns).order_by().query.sql_with_params()
    memory, project, team, persona = (
        Memory._meta.db_table,
        Project._meta.db_table,
        Team._meta.db_table,
        Persona._meta.db_table,
    )
    materialized = "MATERIALIZED " if connection.vendor == "postgresql" else ""
    summary = f"""
        WITH matched AS {materialized}({sql}),
        per_memory AS (SELECT memory_id, COUNT(*) AS n FROM matched GROUP BY memory_id)
        SELECT 0 AS kind, page.id, 0 AS n, NULL AS name, ROW_NUMBER() OVER (ORDER BY {order}) AS position
          FROM (SELECT id, {rank} FROM matched ORDER BY {order} LIMIT %s OFFSET %s) AS page
        UNION ALL
        SELECT 1, t.id, SUM(pm.n), t.name, 0 FROM per_memory pm
          JOIN {memory} m ON m.id = pm.memory_id JOIN {project} p ON p.id = m.project_id
          LEFT JOIN {team} t ON t.id = p.team_id GROUP BY t.id, t.name
        UNION ALL
        SELECT 2, pe.id, SUM(pm.n), pe.name, 0 FROM per_memory pm
          JOIN {memory} m ON m.id = pm.memory_id JOIN {persona} pe ON pe.id = m.persona_id
          GROUP BY pe.id, pe.name
    """
    with connection.cursor() as cursor:
        cursor.execute(summary, [*params, PAGE_SIZE, offset])
        rows = cursor.fetchall()
    page = sorted((position, pk) for kind, pk, _, _, position in rows if kind == 0)
    teams = [(pk, name, int(n)) for kind, pk, n, name, _ in rows if kind == 1]
    personas = [(pk, name, int(n)) for kind, pk, n, name, _ in rows if kind == 2]
    return [pk for _, pk in page], teams, personas


def any_filter(filters: Filters) -> bool:
    return any(value not in (None, "") for value in vars(filters).values())


def ranked_for_memory(lessons: QuerySet[Lesson], words: str) -> QuerySet[Lesson]:
    """An agent's lesson search in its memory: the lessons matching `words`, best first."""
    query = parse(words)
    if not query:
        return lessons.none()  # only operators or exclusions: nothing to look for
    query = settled(query)
    if (wider := every_prefix(query)) is not None and not matching(lessons, query).exists():
        query = wider  # as search() does: a widespread word's longer words, when nothing holds the word
    return ranked(matching(lessons, query), query)
