"""Reads of an incremental detection pass: which lessons of a memory hold a batch's words.

The search index answers (memory/search/index.py: FTS5 on SQLite, the tsvector column and its GIN
index on PostgreSQL), kept by the database on every write, so a batch's pass reads the lessons that
share its words, not the memory. A word is looked up as detection sees it: a plain word by its
light stem as a prefix (`schedul*` holds "scheduled" and "scheduling"), a word with punctuation (a
path, `node.js`, `max_retries`) as the phrase of its parts. The index's answer may hold a few more
lessons than detection's words would ("retri*" holds "retrieve"); detection reads each lesson's
text again, so a lesson too many costs a comparison, never a finding.

For each word at most MAX_POSTINGS + 1 lessons are read: more says "common", which is all
detection asks of a word that many lessons hold.
"""

import re
from contextlib import contextmanager

from django.db import connection

from memory.conflicts import detection
from memory.models import LessonStatus
from memory.search.index import FTS_TABLE

# Words asked about in one statement (SQLite allows 500 parts in a UNION ALL).
WORDS_PER_QUERY = 200
_PLAIN = re.compile(r"[^\W_]+")


def _sqlite_match(term: str, word: str) -> str:
    if _PLAIN.fullmatch(term) and word.startswith(term):
        return f'text : "{term}"*'
    return 'text : "' + " ".join(_PLAIN.findall(word)) + '"'


def _pg_query(term: str, word: str) -> tuple[str, str]:
    if _PLAIN.fullmatch(term) and word.startswith(term):
        return "to_tsquery('simple'::regconfig, %s)", f"{term}:*"
    return "phraseto_tsquery('simple'::regconfig, %s)", word


@contextmanager
def _without_jit(cursor):
    """PostgreSQL's JIT compiler off for these statements: it takes two hundred cheap lookups for one
    costly query and spends seconds compiling them (20 s against 0.4 s on a 100,000-lesson memory)."""
    if connection.vendor != "postgresql":
        yield
        return
    cursor.execute("SELECT current_setting('jit')")
    (before,) = cursor.fetchone()
    cursor.execute("SET jit = off")
    try:
        yield
    except Exception:
        # Inside a transaction the error aborted it, and its rollback undoes the SET.
        if not connection.in_atomic_block:
            cursor.execute("SELECT set_config('jit', %s, false)", [before])
        raise
    cursor.execute("SELECT set_config('jit', %s, false)", [before])


def lessons_holding(memory_id: int, words: dict[str, str]) -> dict[str, list[int]]:
    """{term: ids of the memory's active lessons holding the word, at most MAX_POSTINGS + 1} for
    `words` ({term: a word it was made from}), in one statement per WORDS_PER_QUERY words."""
    wanted = [(t, w) for t, w in words.items() if _PLAIN.search(w)]
    found: dict[str, list[int]] = {t: [] for t, _ in wanted}
    limit = detection.MAX_POSTINGS + 1
    active = LessonStatus.ACTIVE
    with connection.cursor() as cursor, _without_jit(cursor):
        for start in range(0, len(wanted), WORDS_PER_QUERY):
            chunk = wanted[start : start + WORDS_PER_QUERY]
            parts: list[str] = []
            params: list[int | str] = []
            for i, (term, word) in enumerate(chunk):
                if connection.vendor == "postgresql":
                    tsquery, value = _pg_query(term, word)
                    # OFFSET 0 keeps the memory's condition out of the inner query: the GIN index
                    # leads. Left to itself the planner walks the memory's index and tests every
                    # lesson's vector, which reads the whole memory for a rare word.
                    parts.append(
                        f"(SELECT {i}, id FROM (SELECT id, memory_id, status FROM memory_lesson"
                        f" WHERE search_vector @@ {tsquery} OFFSET 0) AS found"
                        f" WHERE memory_id = %s AND status = %s LIMIT {limit})"
                    )
                    params += [value, memory_id, active]
                else:
                    # CROSS JOIN: the index leads, the lesson row is looked up by id.
                    parts.append(
                        f"SELECT {i}, id FROM (SELECT memory_lesson.id FROM {FTS_TABLE} CROSS JOIN memory_lesson"
                        f" ON memory_lesson.id = {FTS_TABLE}.rowid WHERE {FTS_TABLE} MATCH %s"
                        f" AND memory_lesson.memory_id = %s AND memory_lesson.status = %s LIMIT {limit})"
                    )
                    params += [_sqlite_match(term, word), memory_id, active]
            cursor.execute(" UNION ALL ".join(parts), params)
            for i, lesson_id in cursor.fetchall():
                found[chunk[i][0]].append(lesson_id)
    return found
