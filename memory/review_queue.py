"""What waits for a human: the one definition behind the home page, the nav badge and each memory page.

Each feature that produces review items registers a source: how to count them per memory (one
query however many memories exist), how to list one memory's items with links, and where the
feature's own list lives. The queue keeps the sources apart: "2 promotions, 1 compaction" is
something a team lead can act on, a bare "3" is not.

    from memory.review_queue import register_review_source

    @register_review_source("promotions", singular="promotion", plural="promotions",
                            list_url=lambda: reverse("promotions:inbox"), items=candidates_of)
    def pending_promotions(memory_ids):
        return count_per_memory(Candidate.objects.filter(status="pending"), memory_ids)

Two questions are asked of the sources, each in one UNION query: how many items wait in all (the nav
badge on every page, home's summary: one COUNT per source, no grouping by memory, so no row per
memory comes back however many memories there are) and how many wait in each of a page's memories
(home's cards, a memory page).
"""

import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from memory.access import EVERY_MEMORY, MemoryIds

_SOURCES = {}


@dataclass(frozen=True)
class ReviewSource:
    key: str
    counts: Callable  # (memory_ids, or EVERY_MEMORY) -> a PerMemory (see count_per_memory), or a {memory_id: n} dict
    singular: str
    plural: str
    list_url: Callable | None = None  # () -> the feature's own list of these items
    items: Callable | None = None  # (memory) -> [ReviewItem]; the memory page links each one
    order: int = 100
    # () -> a queryset of the waiting items themselves, annotated `waiting_since` (when each began to
    # wait); with `describe` (item -> ReviewItem), it lets the queue say how long work has waited.
    waiting: Callable | None = None
    describe: Callable | None = None

    def label(self, n):
        return self.singular if n == 1 else self.plural


@dataclass(frozen=True)
class ReviewItem:
    text: str
    url: str
    status: str = ""
    since: object = None  # when it began to wait (a datetime), for sources that know
    memory: str = ""  # "persona × project", where the item is listed outside its memory


@dataclass
class QueueEntry:
    source: ReviewSource
    count: int
    items: list = field(default_factory=list)

    @property
    def label(self):
        return self.source.label(self.count)

    @property
    def url(self):
        return self.source.list_url() if self.source.list_url else ""


@dataclass
class Queue:
    """Counts per source (only sources with something waiting), in the sources' order."""

    entries: list

    @property
    def total(self):
        return sum(e.count for e in self.entries)

    def __bool__(self):
        return bool(self.entries)

    @property
    def summary(self):
        return ", ".join(f"{e.count} {e.label}" for e in self.entries)


def register_review_source(
    key, *, singular=None, plural=None, list_url=None, items=None, order=100, waiting=None, describe=None
):
    def decorator(func):
        _SOURCES[key] = ReviewSource(
            key, func, singular or key, plural or singular or key, list_url, items, order, waiting, describe
        )
        return func

    return decorator


def review_sources():
    return sorted(_SOURCES.values(), key=lambda s: (s.order, s.key))


@dataclass(frozen=True)
class PerMemory:
    """The waiting items of one source, to be counted per memory or in all: what count_per_memory
    returns. `memory_field` is the path from an item to its memory's id."""

    queryset: object
    memory_field: str = "memory_id"

    def rows(self, key):
        """(source key, memory_id, n) rows, one per memory with items."""
        from django.db.models import CharField, Count, F, Value

        return (
            self.queryset.order_by()
            .values(memory_ref=F(self.memory_field))
            .annotate(n=Count("pk"))
            .annotate(source=Value(key, output_field=CharField()))
            .values_list("source", "memory_ref", "n")
        )

    def total(self, key):
        """One (source key, n) row: the items counted in all, without a row per memory."""
        from django.db.models import CharField, Count, Value

        return (
            self.queryset.order_by()
            .annotate(source=Value(key, output_field=CharField()))
            .values("source")
            .annotate(n=Count("pk"))
            .values_list("source", "n")
        )


def _union(querysets):
    return list(querysets[0].union(*querysets[1:], all=True)) if querysets else []


def counts_by_source(memory_ids: MemoryIds) -> dict[str, dict[int, int]]:
    """{source key: {memory_id: n}}. EVERY_MEMORY asks about every memory; ask only about the
    memories a page shows (totals_by_source answers "how many in all" without a row per memory).

    Sources that return a PerMemory (see count_per_memory) are asked in one UNION query.
    """
    result, querysets = {}, []
    for source in review_sources():
        counts = source.counts(memory_ids)
        if isinstance(counts, PerMemory):
            querysets.append(counts.rows(source.key))
            result[source.key] = {}
        else:
            result[source.key] = {m: n for m, n in (counts or {}).items() if n}
    for key, memory_id, n in _union(querysets):
        if n:
            result[key][memory_id] = n
    return result


def totals_by_source(memory_ids: MemoryIds) -> dict[str, int]:
    """{source key: items waiting in all} over memory_ids (EVERY_MEMORY: every memory), sources with none
    left out: one UNION of counts, whose cost follows the waiting items, not the memories.

    Every page asks this for its nav badge. Building and compiling the UNION's querysets costs about
    ten times what the database then spends on it, so its SQL is kept per scope, database and day (_totals_key)."""
    from django.db import connection

    sources = review_sources()
    result: dict[str, int] = {}
    key = _totals_key(memory_ids, sources)
    compiled = _TOTALS_SQL.get(key) if key is not None else None
    if compiled is None:
        querysets, others = [], []
        for source in sources:
            counts = source.counts(memory_ids)
            if isinstance(counts, PerMemory):
                querysets.append(counts.total(source.key))
            else:
                others.append(source)
                result[source.key] = sum(n for n in (counts or {}).values() if n)
        union = querysets[0].union(*querysets[1:], all=True) if querysets else None
        sql, params = union.query.sql_with_params() if union is not None else ("", ())
        compiled = (sql, tuple(params), tuple(others))
        if key is not None:
            with _TOTALS_SQL_LOCK:  # requests served by threads share it
                if len(_TOTALS_SQL) >= TOTALS_SQL_KEPT:
                    _TOTALS_SQL.pop(next(iter(_TOTALS_SQL)))
                _TOTALS_SQL[key] = compiled
    else:
        for source in compiled[2]:  # sources that count in Python are asked every time
            counts = source.counts(memory_ids)
            result[source.key] = sum(n for n in (counts or {}).values() if n)
    if compiled[0]:
        with connection.cursor() as cursor:
            cursor.execute(compiled[0], compiled[1])
            for source_key, n in cursor.fetchall():
                result[source_key] = result.get(source_key, 0) + n
    return {k: n for k, n in result.items() if n}


TOTALS_SQL_KEPT = 512
_TOTALS_SQL: dict[tuple, tuple] = {}
_TOTALS_SQL_LOCK = threading.Lock()


def _totals_key(memory_ids: MemoryIds, sources: list[ReviewSource]) -> tuple | None:
    """What the badge's SQL depends on: the database, the sources registered, the scope's own SQL and
    today's date (expired lessons are counted from today). None (nothing kept) for a scope given as a
    list of ids, which a page of memories asks once."""
    from django.db import connection
    from django.utils import timezone

    if memory_ids is EVERY_MEMORY:
        scope: tuple = ("every",)
    elif hasattr(memory_ids, "query"):
        sql, params = memory_ids.query.sql_with_params()
        scope = (sql, tuple(params))
    else:
        return None
    registered = tuple((s.key, s.counts) for s in sources)
    key = (connection.alias, connection.vendor, registered, scope, timezone.localdate())
    try:
        hash(key)
    except TypeError:  # a parameter that is not a plain value: compile every time
        return None
    return key


def queue_for(memory_id, by_source):
    """The Queue of one memory, from counts_by_source()."""
    sources = {s.key: s for s in review_sources()}
    return Queue(
        [
            QueueEntry(sources[key], per_memory[memory_id])
            for key, per_memory in by_source.items()
            if per_memory.get(memory_id)
        ]
    )


def queue_total(totals):
    """The Queue of the whole product (or of what a person sees), from totals_by_source()."""
    return Queue([QueueEntry(source, totals[source.key]) for source in review_sources() if totals.get(source.key)])


def memory_queue(memory):
    """One memory's Queue with its items listed and linked (the memory page)."""
    entries, counts = [], counts_by_source([memory.pk])
    for source in review_sources():
        count = counts.get(source.key, {}).get(memory.pk, 0)
        if count:
            entries.append(QueueEntry(source, count, list(source.items(memory)) if source.items else []))
    return Queue(entries)


def overdue_age():
    """How long an item may wait before it is marked as waiting too long (REVIEW_OVERDUE_DAYS)."""
    from datetime import timedelta

    from django.conf import settings

    return timedelta(days=settings.REVIEW_OVERDUE_DAYS)


def is_overdue(since, *, now=None):
    from django.utils import timezone

    return since is not None and since < (now or timezone.now()) - overdue_age()


@dataclass
class Overdue(Queue):
    """Items that have waited longer than REVIEW_OVERDUE_DAYS: a Queue whose entries count only those,
    with the threshold and the oldest item's waiting_since."""

    days: int = 0
    oldest: object = None


def overdue(memory_ids: MemoryIds, *, now: datetime | None = None) -> Overdue:
    """The Overdue of memory_ids (EVERY_MEMORY: of every memory): one UNION query over the sources that know
    when their items began to wait."""
    from django.conf import settings
    from django.db.models import CharField, Count, Min, Value
    from django.utils import timezone

    cutoff = (now or timezone.now()) - overdue_age()
    querysets = []
    for source in review_sources():
        if source.waiting is None:
            continue
        qs = source.waiting().filter(waiting_since__lt=cutoff)
        if memory_ids is not EVERY_MEMORY:
            qs = qs.filter(memory_id__in=memory_ids)
        querysets.append(
            qs.order_by()
            .annotate(source=Value(source.key, output_field=CharField()))
            .values("source")
            .annotate(n=Count("pk"), oldest=Min("waiting_since"))
            .values_list("source", "n", "oldest")
        )
    rows = list(querysets[0].union(*querysets[1:], all=True)) if querysets else []
    found = {key: (n, oldest) for key, n, oldest in rows if n}
    entries = [QueueEntry(s, found[s.key][0]) for s in review_sources() if s.key in found]
    oldest = min((o for _, o in found.values() if o is not None), default=None)
    return Overdue(entries, days=settings.REVIEW_OVERDUE_DAYS, oldest=oldest)


def waiting_items(memory_ids: MemoryIds) -> list[ReviewItem]:
    """Every item waiting for review in memory_ids (EVERY_MEMORY: in all) that knows when it began
    to wait, oldest first, each linked and named with its memory (the daily digest)."""
    items = []
    for source in review_sources():
        if source.waiting is None or source.describe is None:
            continue
        qs = source.waiting().select_related("memory__persona", "memory__project")
        if memory_ids is not EVERY_MEMORY:
            qs = qs.filter(memory_id__in=memory_ids)
        for obj in qs.order_by("waiting_since", "pk"):
            item = source.describe(obj)
            memory = obj.memory
            items.append(
                ReviewItem(
                    item.text,
                    item.url,
                    item.status or source.singular,
                    obj.waiting_since,
                    f"{memory.persona.name} × {memory.project.name}",
                )
            )
    items.sort(key=lambda item: item.since)
    return items


_REQUEST_ATTR = "_nw_review_totals"


def request_totals(request):
    """totals_by_source over the memories the signed-in person may see, computed once per request
    (the nav badge, the promotions badge and the home page share it, so they cannot disagree)."""
    if request is None:
        return totals_by_source(None)
    if not hasattr(request, _REQUEST_ATTR):
        from memory.access import visible_memory_ids

        setattr(request, _REQUEST_ATTR, totals_by_source(visible_memory_ids(request.user)))
    return getattr(request, _REQUEST_ATTR)


def has_waiting_items():
    """A filter of memories (a Q on Memory) keeping those with anything waiting for review: one
    subquery per source, so the database finds them without their ids coming back first."""
    from django.db.models import Q

    keep = Q(pk__in=[])
    for source in review_sources():
        counts = source.counts(EVERY_MEMORY)  # a filter on memories the caller has already scoped
        if isinstance(counts, PerMemory):
            keep |= Q(pk__in=counts.queryset.order_by().values(counts.memory_field))
        else:
            keep |= Q(pk__in=[m for m, n in (counts or {}).items() if n])
    return keep


def pending_review_counts(memory_ids: MemoryIds) -> dict[int, int]:
    """{memory_id: items waiting for review} in memory_ids (EVERY_MEMORY: in all), summed over every
    source; memories with none are absent."""
    total = Counter()
    for per_memory in counts_by_source(memory_ids).values():
        total.update(per_memory)
    return {memory_id: n for memory_id, n in total.items() if n}


def runs_needing_a_look(model, *, failed_statuses, completed_status, started_field):
    """Runs that ended badly (rolled back, terminated, failed) that nobody has marked as looked at and
    that no later completed run of the same memory has settled."""
    from django.db.models import Exists, OuterRef

    later_success = model.objects.filter(
        memory=OuterRef("memory"), status=completed_status, **{f"{started_field}__gt": OuterRef(started_field)}
    )
    return model.objects.filter(status__in=failed_statuses, looked_at__isnull=True).filter(~Exists(later_success))


def run_mark_looked_at(*, run, user, needing_a_look):
    """Take a run off the review queue once a person has looked at it; nothing in memory changes.
    `needing_a_look` is the feature's queryset of runs in the queue."""
    from django.core.exceptions import ValidationError
    from django.db import transaction
    from django.utils import timezone

    with transaction.atomic():
        if not needing_a_look.filter(pk=run.pk).update(looked_at=timezone.now(), looked_by=user):
            raise ValidationError("This run is not waiting for anyone to look at it.")
        announce_run(run, "review.decided", decision="looked at", by=user.get_username())


def announce_run(run, event_type, *, decision=None, by=None):
    """Tell the run's team that a run waits for a look, or was looked at (an outbox row, in the
    caller's transaction). Runs link to their own feature's page, `<app label of the run>:run`."""
    from django.urls import reverse

    from memory.signals import review_event

    kind = f"{run._meta.verbose_name}"
    data = {
        "count": 1,
        "items": [
            {
                "kind": kind,
                "id": run.pk,
                "status": run.status,
                "url": reverse(f"{run.url_namespace}:run", args=[run.pk]),
            }
        ],
    }
    if decision:
        data.update(decision=decision, by=by or "someone")
    review_event.send(sender=type(run), event_type=event_type, memory_id=run.memory_id, data=data)


def count_per_memory(queryset: Any, memory_ids: MemoryIds, memory_field: str = "memory_id") -> PerMemory:
    """The waiting items of a source, narrowed to memory_ids: what a source's counts return.
    `memory_field` is the path from an item to its memory's id when the item has no memory key."""
    if memory_ids is not EVERY_MEMORY:
        queryset = queryset.filter(**{f"{memory_field}__in": memory_ids})
    return PerMemory(queryset, memory_field)
