"""The search index, kept by the database itself so every write path keeps it without knowing of it.

SQLite: an FTS5 table `memory_lesson_search` over `memory_lesson` (external content, rowid = lesson
id) with two columns: the lesson's text (unicode61, diacritics folded) and its words' English,
German and Spanish stems. Triggers on `memory_lesson` keep it on insert, delete and an update of the
text, whichever statement writes (single rows, the json_each bulk insert, import, sync, revert). The
stems come from `nw_stems`, a Python function (PyStemmer) every connection registers when it opens
(receivers.py): SQLite has no German or Spanish stemmer, and a trigger cannot call Python otherwise.
A write from outside Django (the sqlite3 shell) therefore fails on `no such function: nw_stems`.

PostgreSQL: a stored generated tsvector column `memory_lesson.search_vector` (the `simple` config
for words as written, plus `english`, `german` and `spanish`) with a GIN index.

SQLite drops a table's triggers when a migration rebuilds the table; `ensure_index` (after every
migrate) puts them back and refills the index if they were missing (and the ref prefix index too).
"""

from django.db import connection

FTS_TABLE = "memory_lesson_search"
TRIGGERS = ("memory_lesson_search_ai", "memory_lesson_search_ad", "memory_lesson_search_au")

SQLITE_TOKENIZE = "tokenize='unicode61 remove_diacritics 2'"
SQLITE_TABLE = (
    f"CREATE VIRTUAL TABLE IF NOT EXISTS {FTS_TABLE} USING fts5("
    f"text, stems, content='memory_lesson', content_rowid='id', {SQLITE_TOKENIZE})"
)
# The table is named as written (not interpolated) in the statements that write it.
_ADD = "INSERT INTO memory_lesson_search(rowid, text, stems) VALUES (new.id, new.text, nw_stems(new.text));"
_REMOVE = (
    "INSERT INTO memory_lesson_search(memory_lesson_search, rowid, text, stems) "
    "VALUES ('delete', old.id, old.text, nw_stems(old.text));"
)
SQLITE_TRIGGERS = [
    f"CREATE TRIGGER IF NOT EXISTS {TRIGGERS[0]} AFTER INSERT ON memory_lesson BEGIN {_ADD} END",
    f"CREATE TRIGGER IF NOT EXISTS {TRIGGERS[1]} AFTER DELETE ON memory_lesson BEGIN {_REMOVE} END",
    f"CREATE TRIGGER IF NOT EXISTS {TRIGGERS[2]} AFTER UPDATE OF text ON memory_lesson BEGIN {_REMOVE} {_ADD} END",
]
SQLITE_FILL = "INSERT INTO memory_lesson_search(rowid, text, stems) SELECT id, text, nw_stems(text) FROM memory_lesson"
SQLITE_EMPTY = "INSERT INTO memory_lesson_search(memory_lesson_search) VALUES ('delete-all')"
SQLITE_OPTIMIZE = "INSERT INTO memory_lesson_search(memory_lesson_search) VALUES ('optimize')"
# How many lessons hold each word of the text column, read by memory/search/prefixes.py (FTS5 counts
# a word's lessons by walking its list: a few milliseconds for a word in a tenth of a million).
VOCABULARY_TABLE = "memory_lesson_search_vocabulary"
SQLITE_VOCABULARY = f"CREATE VIRTUAL TABLE IF NOT EXISTS {VOCABULARY_TABLE} USING fts5vocab({FTS_TABLE}, col)"
SQLITE_DROP = [
    *(f"DROP TRIGGER IF EXISTS {name}" for name in TRIGGERS),
    f"DROP TABLE IF EXISTS {VOCABULARY_TABLE}",
    f"DROP TABLE IF EXISTS {FTS_TABLE}",
]

PG_CONFIGS = ("simple", "english", "german", "spanish")
# `<` and `>` become spaces first: PostgreSQL's parser drops anything shaped like an XML tag
# ("<script>"), words included. The query's text gets the same (selectors._pg_text).
PG_VECTOR = " || ".join(f"to_tsvector('{c}'::regconfig, translate(coalesce(text, ''), '<>', '  '))" for c in PG_CONFIGS)
PG_COLUMN = f"ALTER TABLE memory_lesson ADD COLUMN search_vector tsvector GENERATED ALWAYS AS ({PG_VECTOR}) STORED"
PG_INDEX = "CREATE INDEX lesson_search_gin ON memory_lesson USING gin (search_vector)"
PG_DROP = ["DROP INDEX IF EXISTS lesson_search_gin", "ALTER TABLE memory_lesson DROP COLUMN IF EXISTS search_vector"]
# The query: each config's reading of the words, or-ed, so a word matches its forms in any language.
# With the words as prefixes (terms.pg_prefix_tsquery) or-ed in too: PG_TSQUERY takes five parameters.
# Readings that come out the same (most words read alike in several configs) are or-ed once, by
# nw_tsquery_any: matching and ranking cost in proportion to the query's size. It is IMMUTABLE and its
# arguments are constants, so the planner computes it while planning and estimates from the index's
# statistics how many lessons match (a word in a tenth of them, or in a handful).
PG_FUNCTION = """
CREATE OR REPLACE FUNCTION nw_tsquery_any(VARIADIC readings tsquery[]) RETURNS tsquery
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT ('(' || string_agg(DISTINCT reading::text, ') | (') || ')')::tsquery
    FROM unnest(readings) AS reading WHERE numnode(reading) > 0
$$
"""
PG_FUNCTION_DROP = "DROP FUNCTION IF EXISTS nw_tsquery_any(VARIADIC tsquery[])"
PG_TSQUERY = (
    "nw_tsquery_any("
    + ", ".join(f"websearch_to_tsquery('{c}'::regconfig, %s)" for c in PG_CONFIGS)
    + ", to_tsquery('simple'::regconfig, %s))"
)
# The readings alone (one parameter a config): what a relaxed query excludes, negated with `!!`.
PG_READINGS = "nw_tsquery_any(" + ", ".join(f"websearch_to_tsquery('{c}'::regconfig, %s)" for c in PG_CONFIGS) + ")"


# The ref prefix filter (`ref=src/billing/`) reads from indexes alone: the refs under the prefix with
# their lesson ids (a range on the path), then each lesson's memory, status and date by its id, never
# the lesson's row (text and tsvector: about a kilobyte each, so every match another page read).
# PostgreSQL's index-only scans need the visibility map autovacuum keeps.
PG_PREFIX_INDEXES = [
    "CREATE INDEX IF NOT EXISTS lesson_ref_path_prefix ON memory_lessonref (path varchar_pattern_ops) INCLUDE (lesson_id)",
    "CREATE INDEX IF NOT EXISTS lesson_search_cover ON memory_lesson (id) INCLUDE (memory_id, status, lesson_date)",
]
SQLITE_PREFIX_INDEXES = [
    'CREATE INDEX IF NOT EXISTS lesson_ref_path_prefix ON "memory_lessonref" (path, lesson_id)',
    'CREATE INDEX IF NOT EXISTS lesson_search_cover ON "memory_lesson" (id, memory_id, status, lesson_date)',
]
PREFIX_INDEX_NAMES = ("lesson_ref_path_prefix", "lesson_search_cover")


def create_prefix_indexes(cursor, vendor: str) -> None:
    """The ref prefix indexes (and on PostgreSQL the query's function)."""
    if vendor == "postgresql":
        cursor.execute(PG_FUNCTION)
    for sql in SQLITE_PREFIX_INDEXES if vendor == "sqlite" else PG_PREFIX_INDEXES if vendor == "postgresql" else []:
        cursor.execute(sql)


def drop_prefix_indexes(cursor, vendor: str) -> None:
    for name in PREFIX_INDEX_NAMES:
        cursor.execute(f"DROP INDEX IF EXISTS {name}")
    if vendor == "postgresql":
        cursor.execute(PG_FUNCTION_DROP)


def sqlite_triggers_missing(cursor) -> bool:
    cursor.execute("SELECT count(*) FROM sqlite_master WHERE type = 'trigger' AND name IN (%s, %s, %s)", TRIGGERS)
    return cursor.fetchone()[0] < len(TRIGGERS)


def ensure_index() -> bool:
    """Create what is missing of the SQLite index (after a table rebuild); True when it was refilled."""
    if connection.vendor != "sqlite":
        return False
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM sqlite_master WHERE name = 'memory_lesson'")
        if not cursor.fetchone()[0]:
            return False
        cursor.execute("SELECT count(*) FROM sqlite_master WHERE name = 'memory_lessonref'")
        if cursor.fetchone()[0]:  # a rebuild of either table drops its index too
            create_prefix_indexes(cursor, "sqlite")
        cursor.execute("SELECT count(*) FROM sqlite_master WHERE name = %s", [FTS_TABLE])
        if cursor.fetchone()[0]:
            cursor.execute(SQLITE_VOCABULARY)
        if not sqlite_triggers_missing(cursor):
            return False
    rebuild()
    return True


def rebuild() -> int:
    """Refill the index from memory_lesson (and create its table and triggers if missing); the lessons indexed."""
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute(SQLITE_TABLE)
            cursor.execute(SQLITE_VOCABULARY)
            for sql in SQLITE_TRIGGERS:
                cursor.execute(sql)
            cursor.execute(SQLITE_EMPTY)
            cursor.execute(SQLITE_FILL)
            cursor.execute(SQLITE_OPTIMIZE)
        elif connection.vendor == "postgresql":
            # The column is computed by PostgreSQL on every write; only its index can be rebuilt.
            cursor.execute("REINDEX INDEX lesson_search_gin")
        cursor.execute("SELECT count(*) FROM memory_lesson")
        return cursor.fetchone()[0]
