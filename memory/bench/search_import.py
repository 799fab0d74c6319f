"""Benchmark: what keeping the search index costs an import.

The real import path (`memory_import_tree`, as `manage.py import_memory` runs it, committed) brings in
trees of Night Watch files holding `bench.scaled(20_000)` lessons each (100 memories of 200 lines,
their words taken from the labelled search corpus: English, German, Spanish and code-like tokens,
with a number and now and then a ref), alternately with the index kept and without it, each import
a tree of its own (new personas, so every line is new). The pairs take turns on which goes first, so
a store growing and the machine's load drifting fall on both alike; the figure is the median of the
pairs' ratios, in wall time and in CPU time: this process's, and on PostgreSQL also the server
process serving its connection when the server runs on this machine (read from /proc), so the
figure holds on a machine busy with other work.

Without the index means: on SQLite its triggers dropped (the FTS5 table is not written to), then put
back with the new lessons indexed, untimed. On PostgreSQL the generated column and its GIN index
dropped in a transaction around the import, rolled back afterwards (both sides alike, so the store
stays as it was and the column need not be added back, which rewrites the table): the commit, a
WAL flush, is left out on both sides.

Where the cost goes: the same lessons' text written straight into a scratch table of its own, CPU
per lesson (this process's and the server's), with no index, with the least index any search by
words needs (PostgreSQL: a GIN index over the words as written, handed over ready-made, so no
parsing at all; SQLite: FTS5 over the text alone, no stems), and with the index as shipped. The
least index's cost over the import's own gives the lowest ratio any index kept by the writes could
reach with this import: on PostgreSQL it is above the target before a single word is stemmed.
"""

import json
import os
import random
import secrets
import statistics
import time
from datetime import date, timedelta
from pathlib import Path

from django.db import connection, transaction

from memory.bench import benchmark

LESSONS = 20_000
PER_MEMORY = 200  # 20 core lines and 180 working lines in sections of six
PAIRS = 5
CORPUS = Path(__file__).resolve().parent.parent / "search" / "corpus" / "lessons.json"
CATEGORIES = ["OBSERVATION", "HYPOTHESIS", "TODO", "PATTERN", "DECISION"]


def _words():
    lessons = json.loads(CORPUS.read_text(encoding="utf-8"))["lessons"]
    return [word for lesson in lessons for word in lesson["text"].rstrip(".").split()]


def _lesson(rng, words, n):
    from memory.refs import Ref

    k = rng.randint(8, 24)
    start = rng.randrange(len(words) - k)
    picked = words[start : start + k]
    for _ in range(rng.randint(0, 3)):
        picked[rng.randrange(k)] = rng.choice(words)
    refs = [Ref(f"src/module_{n % 300}/file_{n % 41}.py", 1 + n % 500, None)] if n % 3 == 0 else []
    return " ".join(picked).capitalize() + f" (case {n})", refs


def generate_tree(root, *, memories, seed, persona):
    """`memories` memory folders of PER_MEMORY lines each under `root`; returns the lines written."""
    from memory.formats.lines import core_line, section_header, working_line

    rng, words, n = random.Random(seed), _words(), 0
    for m in range(memories):
        folder = Path(root) / f"{persona} {m // 10:03d}" / "memories" / f"project-{m % 10:03d}"
        folder.mkdir(parents=True)
        core = []
        for _ in range(PER_MEMORY // 10):
            core.append(core_line("PATTERN", *_lesson(rng, words, n), date(2025, 1, 1) + timedelta(days=n % 300)))
            n += 1
        (folder / "core.md").write_text("".join(line + "\n" for line in core), encoding="utf-8")
        lines, day = [], date(2025, 1, 1)
        for i in range(PER_MEMORY - len(core)):
            if i % 6 == 0:
                if lines:
                    lines.append("")
                day += timedelta(days=1)
                lines.append(section_header(day, rng.choice(CATEGORIES)))
            lines.append(working_line(rng.choice(CATEGORIES), *_lesson(rng, words, n)))
            n += 1
        (folder / "working.md").write_text("\n".join(lines) + "\n\n", encoding="utf-8")
    return n


class _Rollback(Exception):
    pass


class _SqliteIndex:
    """SQLite: the index's triggers dropped for an import without it, put back (untimed) before one
    with it, the lessons written meanwhile indexed then."""

    def __init__(self):
        self.kept = True
        self.first_new_id = 0

    def keep(self, kept):
        from memory.search import index

        if kept == self.kept:
            return
        with connection.cursor() as cursor:
            if kept:
                cursor.execute(f"{index.SQLITE_FILL} WHERE id > %s", [self.first_new_id])
                for sql in index.SQLITE_TRIGGERS:
                    cursor.execute(sql)
            else:
                cursor.execute("SELECT COALESCE(MAX(id), 0) FROM memory_lesson")
                self.first_new_id = cursor.fetchone()[0]
                for name in index.TRIGGERS:
                    cursor.execute(f"DROP TRIGGER {name}")
        self.kept = kept


def _server_cpu():
    """CPU seconds used so far by the PostgreSQL server process of this connection when it runs on this
    machine (None when it cannot be read: another host, no /proc); 0 on SQLite, which runs in-process."""
    if connection.vendor != "postgresql":
        return 0.0
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        (pid,) = cursor.fetchone()
    proc = Path("/proc") / str(pid)
    try:
        host = connection.settings_dict.get("HOST") or ""
        if host not in ("", "localhost", "127.0.0.1", "::1") and not host.startswith("/"):
            return None
        if b"postgres" not in (proc / "cmdline").read_bytes():
            return None
        fields = (proc / "stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


# Named as written (not interpolated) in the statements that write them (tests/test_one_write_path.py).
FLOOR_TABLE = "nw_bench_index_floor"
FLOOR_FTS = "nw_bench_index_floor_search"
FLOOR_ROUNDS = 3


def _pg_lexemes(text):
    """A tsvector's text for the words of `text` as written, each with its positions (phrases need
    them): what any index of the words holds at least. Words are letters, digits and `_` only."""
    from memory.search import terms

    positions: dict[str, list[str]] = {}
    for i, word in enumerate(terms.words(text), 1):
        positions.setdefault(word, []).append(str(min(i, 16383)))
    return " ".join(f"'{word}':{','.join(p)}" for word, p in positions.items())


def _write_cost(texts, kind):
    """CPU seconds per lesson to write `texts` into a scratch table with the `kind` of index (none,
    least, shipped), rolled back; None when the server's CPU cannot be read."""
    from memory.search import index

    pg = connection.vendor == "postgresql"
    if pg:
        vector = {"least": "tsvector", "shipped": f"tsvector GENERATED ALWAYS AS ({index.PG_VECTOR}) STORED"}
        create = [
            f"CREATE TABLE {FLOOR_TABLE} (id integer PRIMARY KEY, text text"
            + (f", v {vector[kind]})" if kind in vector else ")")
        ]
        if kind != "none":
            create.append(f"CREATE INDEX {FLOOR_TABLE}_gin ON {FLOOR_TABLE} USING gin (v)")
        lexemes = [_pg_lexemes(text) for text in texts] if kind == "least" else None
    else:
        columns = {"least": ("text", ""), "shipped": ("text, stems", ", nw_stems(new.text)")}
        create = [f"CREATE TABLE {FLOOR_TABLE} (id integer PRIMARY KEY, text text)"]
        if kind != "none":
            names, values = columns[kind]
            create += [
                f"CREATE VIRTUAL TABLE {FLOOR_FTS} USING fts5({names}, content='{FLOOR_TABLE}', "
                f"content_rowid='id', {index.SQLITE_TOKENIZE})",
                f"CREATE TRIGGER {FLOOR_FTS}_ai AFTER INSERT ON {FLOOR_TABLE} BEGIN "
                f"INSERT INTO nw_bench_index_floor_search(rowid, {names}) VALUES (new.id, new.text{values}); END",
            ]
        payload = json.dumps(texts, ensure_ascii=False)
    spent = None
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            for sql in create:
                cursor.execute(sql)
            server, cpu = _server_cpu(), time.process_time()
            if pg:
                columns_copied = "id, text, v" if lexemes else "id, text"
                with cursor.cursor.copy(f"COPY nw_bench_index_floor ({columns_copied}) FROM STDIN") as copy:
                    for i, text in enumerate(texts):
                        copy.write_row((i, text, lexemes[i]) if lexemes else (i, text))
            else:
                cursor.execute(
                    "INSERT INTO nw_bench_index_floor (id, text) SELECT key, value FROM json_each(%s)", [payload]
                )
            server_after = _server_cpu()
            if server is not None and server_after is not None:
                spent = (time.process_time() - cpu + server_after - server) / len(texts)
            raise _Rollback
    except _Rollback:
        return spent


def _cost_floor(bench, without_per_lesson, lessons):
    """Where the index's cost goes, and the lowest ratio an index kept by the writes could reach."""
    rng, words = random.Random(0), _words()
    texts = [_lesson(rng, words, n)[0] for n in range(lessons)]
    kinds = ("none", "least", "shipped")
    costs: dict[str, list[float]] = {kind: [] for kind in kinds}
    for round_ in range(FLOOR_ROUNDS):
        for kind in kinds if round_ % 2 == 0 else kinds[::-1]:
            cost = _write_cost(texts, kind)
            if cost is None:
                bench.note("where the cost goes: not measured (the database server's CPU cannot be read from here)")
                return
            costs[kind].append(cost)
    none, least, shipped = (statistics.median(costs[kind]) * 1e6 for kind in kinds)
    pg = connection.vendor == "postgresql"
    bench.figure(f"{lessons:,} lessons' text written alone, per lesson", none, unit="µs")
    bench.figure(
        "+ GIN over the words as written, ready-made" if pg else "+ FTS5 over the text alone (no stems)",
        least - none,
        unit="µs",
    )
    bench.figure(
        "+ the index as shipped (four parses + GIN)" if pg else "+ the index as shipped (text + stems)",
        shipped - none,
        unit="µs",
    )
    bench.figure("the import's own CPU per lesson, without the index", without_per_lesson * 1e6, unit="µs")
    bench.figure(
        "least ratio any kept index allows (import + least)", 1 + (least - none) / (without_per_lesson * 1e6), unit="×"
    )


def _spread(values):
    return f"{min(values):.2f}–{max(values):.2f}"


@benchmark("search-import", "What keeping the search index costs an import (index kept ÷ dropped)")
def bench_search_import(bench):
    from memory.formats.importer import memory_import_tree
    from memory.formats.nightwatch import read_tree
    from memory.search import index as search_index
    from memory.services import Actor

    actor = Actor.system("bench")
    memories = max(1, bench.scaled(LESSONS) // PER_MEMORY)
    trees = 0
    # Personas of their own for each run, so a rerun on the same store imports every line anew
    # (the same names would find the last run's lines already there).
    run = secrets.token_hex(3)

    def new_tree():
        nonlocal trees
        trees += 1
        root = bench.tmpdir / f"tree-{trees}"
        lines = generate_tree(root, memories=memories, seed=trees, persona=f"Search import {run} {trees:02d}")
        return read_tree(root), lines

    def timed_import(tree, lines):
        server = _server_cpu()
        cpu, start = time.process_time(), time.perf_counter()
        report = memory_import_tree(tree=tree, actor=actor)
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu
        server_after = _server_cpu()
        if server is not None and server_after is not None:
            cpu += server_after - server
        else:
            server_seen[0] = False
        assert report.added == lines and not report.unparsed, "the generated tree must import whole"
        return wall, cpu

    server_seen = [True]  # whether the CPU figures include the database server's (always, on SQLite)
    sqlite = connection.vendor == "sqlite"
    sqlite_index = _SqliteIndex()

    def import_one(kept):
        tree, lines = new_tree()
        if sqlite:
            sqlite_index.keep(kept)
            return timed_import(tree, lines)
        try:
            with transaction.atomic():
                if not kept:
                    with connection.cursor() as cursor:
                        for sql in search_index.PG_DROP:
                            cursor.execute(sql)
                timed = timed_import(tree, lines)
                raise _Rollback
        except _Rollback:
            return timed

    import_one(True)  # warm: the first import's one-off costs (imports, caches) fall on neither side
    walls: dict[bool, list[float]] = {True: [], False: []}
    cpus: dict[bool, list[float]] = {True: [], False: []}
    loads = []
    try:
        for pair in range(PAIRS):
            for kept in (True, False) if pair % 2 == 0 else (False, True):
                wall, cpu = import_one(kept)
                walls[kept].append(wall)
                cpus[kept].append(cpu)
            if hasattr(os, "getloadavg"):
                loads.append(os.getloadavg()[0])
    finally:
        if sqlite:
            sqlite_index.keep(True)
    wall_ratios = [a / b for a, b in zip(walls[True], walls[False])]
    cpu_ratios = [a / b for a, b in zip(cpus[True], cpus[False])]
    n = memories * PER_MEMORY
    bench.figure(
        f"import of {n:,} lessons, index kept",
        statistics.median(walls[True]),
        unit="s",
        cpu=statistics.median(cpus[True]),
    )
    bench.figure(
        f"import of {n:,} lessons, without the index",
        statistics.median(walls[False]),
        unit="s",
        cpu=statistics.median(cpus[False]),
    )
    bench.figure(
        "import with the index ÷ without (wall)",
        statistics.median(wall_ratios),
        unit="×",
        target=1.15,
        cpu=statistics.median(cpu_ratios),
    )
    bench.note(
        f"{connection.vendor}: {PAIRS} pairs, ratio per pair wall {_spread(wall_ratios)}, cpu {_spread(cpu_ratios)}"
        + (f"; 1-minute load {_spread(loads)}" if loads else "")
        + ("" if server_seen[0] else "; CPU of this process only (the server's could not be read)")
    )
    if server_seen[0]:
        _cost_floor(bench, statistics.median(cpus[False]) / n, n)
