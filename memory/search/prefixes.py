"""Which query words are too widespread to match as the start of longer words.

A strict query also matches its longer words as prefixes ("docker" finds "Dockerfile"): see
terms.fts5_match and terms.pg_prefix_tsquery. An index answers a prefix by gathering every lesson
holding any word that starts with it, before the other words narrow anything: at a million lessons,
"test" gathers over a hundred thousand, and the PostgreSQL GIN index took about 100 ms for it where
the word alone takes 10 (SQLite's bm25 also weighs the prefix as a term of its own, walking it once
more). A word whose words fill more than PREFIX_MAX_LESSONS lessons is therefore matched as written
and by its stems in each language, not as a prefix: its own forms already match thousands of
lessons. A store too small for any word to reach the line keeps every prefix.

How many lessons hold the words starting with a word:
- PostgreSQL: the statistics ANALYZE keeps of the index column (its most common lexemes and their
  share of rows, in pg_stats), read at most once every STATISTICS_SECONDS by each process (a store
  not analysed yet keeps every prefix);
- SQLite: the index itself, through its fts5vocab table (one query a search, a few milliseconds for
  the most common words).
"""

from bisect import bisect_left

from django.core.cache import caches
from django.db import connection

from memory.models import Lesson
from memory.search import index
from memory.search.terms import fts5_quote

PREFIX_MAX_LESSONS = 5_000
STATISTICS_SECONDS = 600

_STATISTICS = """
    SELECT s.most_common_elems::text::text[], s.most_common_elem_freqs, c.reltuples
      FROM pg_class c
      LEFT JOIN pg_stats s
        ON s.schemaname = current_schema() AND s.tablename = %s AND s.attname = 'search_vector'
     WHERE c.oid = %s::regclass
"""


def widespread(words: list[str]) -> frozenset[str]:
    """Of `words`, those that start words in more than PREFIX_MAX_LESSONS lessons."""
    if not words:
        return frozenset()
    if connection.vendor == "sqlite":
        return _sqlite_widespread(sorted(set(words)))
    if connection.vendor != "postgresql":
        return frozenset()
    lexemes, lessons = _statistics()
    found = set()
    for word in words:
        at, share = bisect_left(lexemes, (word,)), 0.0
        while at < len(lexemes) and lexemes[at][0].startswith(word):
            share += lexemes[at][1]  # a lesson holding two of them counts twice: an upper bound
            at += 1
        if share * lessons > PREFIX_MAX_LESSONS:
            found.add(word)
    return frozenset(found)


def _statistics() -> tuple[tuple[tuple[str, float], ...], float]:
    """([(lexeme, share of lessons holding it)] sorted, the lessons counted), kept by the process."""
    settings = connection.settings_dict
    key = f"search-prefix-statistics:{connection.alias}:{settings['HOST']}:{settings['PORT']}:{settings['NAME']}"
    local = caches["local"]
    kept = local.get(key)
    if kept is None:
        table = Lesson._meta.db_table
        with connection.cursor() as cursor:
            cursor.execute(_STATISTICS, [table, table])
            row = cursor.fetchone()
        elems, freqs, lessons = row if row else (None, None, 0)
        # The shares list ends with three figures of its own (the least and most share, nulls): zip drops them.
        kept = (tuple(sorted(zip(elems or [], freqs or []))), max(float(lessons or 0), 0.0))
        local.set(key, kept, STATISTICS_SECONDS)
    return kept


def _sqlite_widespread(words: list[str]) -> frozenset[str]:
    """The index's own counts: lessons holding each word starting with the word in the text column
    (a lesson holding two such words counts twice: an upper bound, as on PostgreSQL). The word as
    written is tried first, reading no further than the line (under a millisecond): the sum over the
    words starting with it walks every one of their lists (5 ms for "test" at a million lessons)."""
    line = PREFIX_MAX_LESSONS + 1
    count = (
        f"CASE WHEN (SELECT count(*) FROM (SELECT 1 FROM {index.FTS_TABLE} WHERE {index.FTS_TABLE} MATCH %s"
        f" LIMIT {line})) = {line} THEN {line}"
        f" ELSE (SELECT coalesce(sum(doc), 0) FROM {index.VOCABULARY_TABLE}"
        " WHERE col = 'text' AND term >= %s AND term < %s) END"
    )
    params = [value for word in words for value in (f"text : {fts5_quote(word)}", word, word + "\U0010ffff")]
    with connection.cursor() as cursor:
        cursor.execute("SELECT " + ", ".join([count] * len(words)), params)
        counts = cursor.fetchone()
    return frozenset(word for word, n in zip(words, counts) if n > PREFIX_MAX_LESSONS)
