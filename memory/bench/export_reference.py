"""The floor an export is measured against: the rows `import_reference` wrote, read back with the
sqlite3 module and written out as the same files, with no Django in the way.

It names each memory's folder as `reference_import` numbered the memories (the source tree's
persona and project folders, in sorted order), and for every memory runs one query for its active
lessons in id order with their refs in position order (the statement the exporter runs, on the
`scratch_…` copies of the tables), renders core.md and working.md with the product's own renderer
(`memory.formats.lines`), and writes every file as the exporter does: what is there is read first
(a file that would not change is left alone), then a temporary file in the same folder, fsync,
`os.replace`, on the exporter's number of writer threads.

Not done: reading personas, projects and memories from the database (the folder names come from
listing the source tree), checking folder names, the join to ref anchors (the scratch tables have
none, so no ref is marked stale), and backups of replaced files (the folder is new).
"""

import os
import tempfile
from concurrent.futures import ThreadPoolExecutor
from datetime import date
from pathlib import Path

from memory.formats.exporter import WRITERS
from memory.formats.lines import render_core, render_working
from memory.formats.nightwatch import CORE_FILE, MEMORIES_DIR, WORKING_FILE
from memory.refs import Ref
from memory.selectors import LessonRow

ROWS = (
    "SELECT l.id, l.tier, l.category, l.text, l.relevance, l.protected, l.lesson_date, l.section, l.unparsed, "
    "l.raw_line, l.undated, l.section_heading, r.path, r.start_line, r.end_line "
    "FROM (SELECT * FROM scratch_lesson WHERE memory_id = ? AND status = 'active' ORDER BY id) l "
    "LEFT JOIN scratch_lessonref r ON r.lesson_id = l.id ORDER BY l.id, r.position, r.id"
)


def memory_folders(src, out):
    """[folder under `out`] by memory id - 1, numbered as `reference_import` numbers the memories."""
    folders = []
    for persona_dir in sorted(Path(src).iterdir()):
        memories = persona_dir / MEMORIES_DIR
        if memories.is_dir():
            folders += [
                Path(out) / persona_dir.name / MEMORIES_DIR / folder.name for folder in sorted(memories.iterdir())
            ]
    return folders


def _files(db, memory_id, folder):
    core, working = [], []
    last = refs = None
    for row in db.execute(ROWS, (memory_id,)):
        if row[0] != last:
            last, refs = row[0], []
            lesson = LessonRow(
                row[0],
                row[1],
                row[2],
                row[3],
                row[4],
                bool(row[5]),
                date.fromisoformat(row[6]),
                row[7],
                bool(row[8]),
                row[9],
                bool(row[10]),
                row[11],
            )
            (core if row[1] == "core" else working).append((lesson, refs))
        if row[12] is not None:
            refs.append(Ref(row[12], row[13], row[14]))
    return [
        (folder / CORE_FILE, render_core(core).encode("utf-8")),
        (folder / WORKING_FILE, render_working(working).encode("utf-8")),
    ]


def _write(item):
    path, data = item
    if path.is_file() and path.read_bytes() == data:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


def reference_export(src, db, out):
    """Write the memories `reference_import` put in `db` under `out`; returns the number of files written."""
    files = []
    for memory_id, folder in enumerate(memory_folders(src, out), 1):
        files += _files(db, memory_id, folder)
    with ThreadPoolExecutor(max_workers=WRITERS) as pool:
        list(pool.map(_write, files))
    return len(files)
