"""Which query words are too widespread to match as the start of longer words (PostgreSQL).

A strict query also matches its longer words as prefixes ("docker" finds "Dockerfile"): see
terms.pg_prefix_tsquery. The GIN index answers a prefix by gathering every lesson holding any word
that starts with it, before the other words narrow anything: at a million lessons, "test" gathers
over a hundred thousand and costs about 100 ms where the word alone costs 10. A word whose words
fill more than PREFIX_MAX_LESSONS lessons is therefore matched as written and by its readings in
each language, not as a prefix: its own forms already match thousands of lessons, and the stems
find its inflections. Which words those are comes from the statistics ANALYZE keeps of the index
column (its most common lexemes and their share of rows, in pg_stats), read at most once every
STATISTICS_SECONDS by each process. A store too small for any word to reach the line (or not
analysed yet) keeps every prefix.
"""

from bisect import bisect_left

from django.core.cache import caches
from django.db import connection

from memory.models import Lesson

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
    """Of `words`, those that start words in more than PREFIX_MAX_LESSONS lessons (none but on PostgreSQL)."""
    if connection.vendor != "postgresql" or not words:
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
