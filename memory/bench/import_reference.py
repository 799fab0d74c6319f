"""The floor an import is measured against: the same files read and parsed in plain Python and the
same rows written with the sqlite3 module's executemany, with no Django in the way.

It reads every memory folder of the tree (core.md, working.md), decodes and digests the bytes as
the importer does, parses the lines with the same parser, and writes what an import writes for
them: one `import` batch per memory, one lesson per line (with its content hash), its refs, and one
`create` change holding the lesson's snapshot. The tables are scratch copies of the product's own
(same columns, constraints and indexes, read from the live SQLite database, named `scratch_…` so
nothing here names a table of the product), in a database of its own with the product's pragmas,
in one transaction. Ids are given explicitly, counted up from one.

Not written: personas, projects, memories and the imported-folder records (a handful of rows per
folder), and nothing is read back (the product also checks what is already there).
"""

import hashlib
import json
import sqlite3
from datetime import UTC, date, datetime
from pathlib import Path

from memory.formats.nightwatch import CORE_FILE, MEMORIES_DIR, WORKING_FILE, parse_core, parse_working
from memory.models import content_hash
from memory.search import index as search_index
from memory.search import terms as search_terms

TABLES = ("memory_changebatch", "memory_lesson", "memory_lessonref", "memory_change")
# Each copied table under a name of its own: memory_lesson -> scratch_lesson, and so on.
SCRATCH = {table: table.replace("memory_", "scratch_", 1) for table in TABLES}


def copy_schema(django_connection, path):
    """A new SQLite database at `path` holding the import's tables as the product's database has them."""
    placeholders = ", ".join("%s" for _ in TABLES)
    with django_connection.cursor() as cursor:
        # Tables and indexes; the search index and its triggers are made below, with the function they call.
        cursor.execute(
            f"SELECT sql FROM sqlite_master WHERE tbl_name IN ({placeholders}) AND sql IS NOT NULL "
            "AND type IN ('table', 'index') ORDER BY type = 'index'",
            list(TABLES),
        )
        statements = [row[0] for row in cursor.fetchall()]
    for table, scratch in SCRATCH.items():  # the quoted table name, not index names that start with it
        statements = [sql.replace(f'"{table}"', f'"{scratch}"') for sql in statements]
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    for sql in statements:
        db.execute(sql)
    # The product's database keeps a full-text index of lesson text by triggers (memory/search/index.py):
    # the reference keeps the same one, with the same stemming function, so both write the same rows.
    db.create_function("nw_stems", 1, search_terms.stems, deterministic=True)
    for sql in [search_index.SQLITE_TABLE, *search_index.SQLITE_TRIGGERS]:
        db.execute(sql.replace("memory_lesson", "scratch_lesson"))
    return db


def _snapshot(line, day):
    return json.dumps(
        {
            "tier": line.tier,
            "category": line.category,
            "text": line.text,
            "relevance": "medium",
            "protected": False,
            "status": "active",
            "lesson_date": day,
            "refs": [r.as_text() for r in line.refs],
        }
    )


def reference_import(root, db, *, label="bench reference", actor="bench"):
    """Import the tree at `root` into `db` (from copy_schema); returns the number of lessons written."""
    now = datetime.now(UTC).isoformat(sep=" ")
    today = date.today()
    batches, lessons, refs, changes = [], [], [], []
    lesson_id = 0
    memory_id = 0
    for persona_dir in sorted(Path(root).iterdir()):
        memories = persona_dir / MEMORIES_DIR
        if not memories.is_dir():
            continue
        for folder in sorted(memories.iterdir()):
            memory_id += 1
            digest, lines = hashlib.sha256(), []
            for name, parse in ((CORE_FILE, parse_core), (WORKING_FILE, parse_working)):
                path = folder / name
                if path.is_file():
                    data = path.read_bytes()
                    digest.update(f"{name}\0{len(data)}\0".encode())
                    digest.update(data)
                    lines += parse(data.decode("utf-8"), name)
            batch_id = memory_id
            batches.append((batch_id, "import", label, f"Imported from {folder}", "system", actor, now, memory_id))
            for line in lines:
                lesson_id += 1
                day = (line.lesson_date or today).isoformat()
                section = 0 if line.tier == "core" else 1 + line.section
                lessons.append(
                    (
                        lesson_id,
                        line.tier,
                        line.category,
                        line.text,
                        "medium",
                        False,
                        "active",
                        day,
                        section,
                        line.unparsed,
                        line.raw_line if line.unparsed else "",
                        False,
                        content_hash(line.text),
                        "[]",
                        now,
                        now,
                        memory_id,
                        line.heading[:100],
                        line.lesson_date is None,
                        "",  # expires_when: an imported line carries no expiry
                    )
                )
                for position, ref in enumerate(line.refs):
                    refs.append((ref.path, ref.start_line, ref.end_line, position, lesson_id))
                changes.append(("create", _snapshot(line, day), now, batch_id, lesson_id, memory_id))
    db.execute("BEGIN IMMEDIATE")
    db.executemany(
        "INSERT INTO scratch_changebatch (id, kind, label, reason, actor_type, actor_label, created_at, memory_id) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        batches,
    )
    db.executemany(
        "INSERT INTO scratch_lesson (id, tier, category, text, relevance, protected, status, lesson_date, section, "
        "unparsed, raw_line, vague, content_hash, source_entry_ids, created_at, updated_at, memory_id, "
        "section_heading, undated, expires_when) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        lessons,
    )
    db.executemany(
        "INSERT INTO scratch_lessonref (path, start_line, end_line, position, lesson_id) VALUES (?, ?, ?, ?, ?)", refs
    )
    db.executemany(
        'INSERT INTO scratch_change (action, "after", created_at, batch_id, lesson_id, memory_id) '
        "VALUES (?, ?, ?, ?, ?, ?)",
        changes,
    )
    db.execute("COMMIT")
    return len(lessons)
