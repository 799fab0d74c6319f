"""The ranked read: lessons matching a query and filters, among those a person (or a token) may see.

The database's own full-text engine ranks (SQLite FTS5 bm25, PostgreSQL ts_rank_cd over the
generated tsvector); see memory/search/index.py for how the index is kept.
"""

from dataclasses import dataclass, field
from datetime import date
from typing import Any

from django.db import connection
from django.db.models import Count, QuerySet
from django.utils import timezone

from memory.access import scope
from memory.models import Lesson, LessonRef, LessonStatus
from memory.search import index
from memory.search.highlight import highlight
from memory.search.terms import Query, fts5_match, parse, pg_prefix_tsquery

PAGE_SIZE = 20
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


def matching(lessons: QuerySet[Lesson], query: Query) -> QuerySet[Lesson]:
    """The lessons matching the query (all of them for an empty query: the filters alone choose)."""
    if not query:
        return lessons
    if connection.vendor == "sqlite":
        expr = fts5_match(query)
        lessons = lessons.extra(
            tables=[index.FTS_TABLE],
            where=[f"{index.FTS_TABLE}.rowid = memory_lesson.id", f"{index.FTS_TABLE} MATCH %s"],
            params=[expr],
        )
    else:
        lessons = lessons.extra(where=[f"memory_lesson.search_vector @@ {index.PG_TSQUERY}"], params=_pg_params(query))
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
    rank = f"-ts_rank_cd(memory_lesson.search_vector, {index.PG_TSQUERY})"
    return lessons.extra(select={"search_rank": rank}, select_params=_pg_params(query), order_by=["search_rank", "-id"])


def _pg_params(query: Query) -> list[str]:
    text = query.text.replace("<", " ").replace(">", " ")  # as the indexed text (index.PG_VECTOR)
    return [text] * len(index.PG_CONFIGS) + [pg_prefix_tsquery(query) or "''"]


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

    Five queries: the count, the team counts, the persona counts, the page, its refs (plus, once per
    request, the user's memberships for the scope)."""
    query = parse(q)
    results = Results(query)
    if (query.text and not query) or (not query.text and not any_filter(filters)):
        return results  # only operators or exclusions, or nothing asked at all
    lessons = matching(filtered(scope(Lesson.objects.all(), user), filters), query)
    results.count = lessons.count()
    if not results.count:
        return results
    results.teams = [
        dict(row)
        for row in lessons.values("memory__project__team_id", "memory__project__team__name")
        .annotate(n=Count("id"))
        .order_by("-n", "memory__project__team__name")
    ]
    results.personas = [
        dict(row)
        for row in lessons.values("memory__persona_id", "memory__persona__name")
        .annotate(n=Count("id"))
        .order_by("-n", "memory__persona__name")
    ]
    offset = (page - 1) * PAGE_SIZE
    rows = (
        ranked(lessons, query)
        .select_related("memory__persona", "memory__project")
        .prefetch_related("refs")[offset : offset + PAGE_SIZE]
    )
    results.hits = [Hit(lesson, highlight(lesson.text, query)) for lesson in rows]
    return results


def any_filter(filters: Filters) -> bool:
    return any(value not in (None, "") for value in vars(filters).values())


def ranked_for_memory(lessons: QuerySet[Lesson], words: str) -> QuerySet[Lesson]:
    """An agent's lesson search in its memory: the lessons matching `words`, best first."""
    query = parse(words)
    if not query:
        return lessons.none()  # only operators or exclusions: nothing to look for
    return ranked(matching(lessons, query), query)
