"""Memory files in and out at team scale, and compiling one very large memory."""

import random
from datetime import date, timedelta
from pathlib import Path

from django.db import connection

from memory.bench import benchmark
from memory.bench.export_reference import reference_export
from memory.bench.import_reference import copy_schema, reference_import
from memory.formats.exporter import export_tree
from memory.formats.importer import memory_import_tree
from memory.formats.lines import core_line, section_header, working_line
from memory.formats.nightwatch import read_tree
from memory.models import Lesson, Memory
from memory.refs import Ref
from memory.selectors import compile_memory
from memory.services import Actor

SUBJECTS = [
    "the retry loop in the queue worker",
    "refresh-token validation",
    "the billing webhook handler",
    "pagination of the search endpoint",
    "the feature-flag cache",
    "database connection pooling",
    "the CSV export job",
    "session cookie flags",
    "the rate limiter",
    "schema migrations on deploy",
]
FINDINGS = [
    "uses a fixed 1s delay with no backoff",
    "skips the expiry check",
    "swallows the upstream error",
    "loads every row before filtering",
    "is read on every request without a TTL",
    "leaks a connection when the handler raises",
    "runs in the request thread and times out at 30s",
    "is missing the SameSite attribute",
    "counts per process, not per user",
    "locks the table for minutes",
]
FILES = [
    "src/queue/worker.ts",
    "src/auth/middleware.ts",
    "app/billing/webhooks.py",
    "api/search.py",
    "lib/flags/cache.go",
    "db/pool.py",
    "jobs/export_csv.py",
    "web/session.ts",
    "api/limits.py",
    "deploy/migrate.sh",
]
WORKING_CATEGORIES = ["OBSERVATION", "HYPOTHESIS", "TODO", "PATTERN", "DECISION"]
CORE_CATEGORIES = ["PATTERN", "DECISION", "ARCHITECTURE"]


def _lesson(rng, n):
    text = f"{rng.choice(SUBJECTS).capitalize()} {rng.choice(FINDINGS)} (case {n})"
    refs = []
    for _ in range(rng.choice((0, 1, 1, 1, 2))):
        start = rng.randint(1, 900)
        refs.append(Ref(rng.choice(FILES), start, start + rng.randint(0, 12) or None))
    return text, refs


def write_working(path, rng, bullets, per_section=6):
    day, lines = date(2025, 1, 1), []
    for i in range(bullets):
        if i % per_section == 0:
            if lines:
                lines.append("")
            day += timedelta(days=rng.randint(0, 2))
            category = rng.choice(WORKING_CATEGORIES)
            lines.append(section_header(day, category))
        else:
            category = rng.choice(WORKING_CATEGORIES)
        lines.append(working_line(category, *_lesson(rng, i)))
    path.write_text("\n".join(lines) + "\n\n", encoding="utf-8")


def write_core(path, rng, bullets):
    lines = [
        core_line(rng.choice(CORE_CATEGORIES), *_lesson(rng, i), date(2025, 1, 1) + timedelta(days=i % 300))
        for i in range(bullets)
    ]
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")


def generate_tree(root, *, personas, projects, core_per_memory, working_per_memory, seed=42, persona="Bench Persona"):
    """personas × projects memories, each a core.md and a working.md. Returns (files, bullets)."""
    rng = random.Random(seed)
    files = bullets = 0
    for p in range(personas):
        for q in range(projects):
            folder = Path(root) / f"{persona} {p:03d}" / "memories" / f"bench-project-{q:03d}"
            folder.mkdir(parents=True)
            write_core(folder / "core.md", rng, core_per_memory)
            write_working(folder / "working.md", rng, working_per_memory)
            files += 2
            bullets += core_per_memory + working_per_memory
    return files, bullets


def _same_files(a, b):
    """Whether two folders hold the same files with the same bytes."""
    names = sorted(p.relative_to(a) for p in Path(a).rglob("*") if p.is_file())
    if names != sorted(p.relative_to(b) for p in Path(b).rglob("*") if p.is_file()):
        return False
    return all((Path(a) / name).read_bytes() == (Path(b) / name).read_bytes() for name in names)


@benchmark("files", "Import and export of 1,000 memory files (100,000 bullets); compiling 10,000 lessons")
def run(bench):
    actor = Actor.system("bench")
    # 25 personas × 20 projects = 500 memories = 1,000 files of 200 bullets (20 core + 180 working).
    personas, projects = bench.scaled(25), bench.scaled(20)
    core_n, working_n = 20, 180
    src = bench.tmpdir / "agents"
    files, bullets = generate_tree(
        src, personas=personas, projects=projects, core_per_memory=core_n, working_per_memory=working_n
    )
    bench.note(f"generated {files:,} files holding {bullets:,} bullets under {src}")
    # Targets scale with the data: 8 s to import 100,000 bullets, 2 s to import them again, 2 s to
    # export 1,000 files, 5 ms to compile a memory of 10,000 lessons.
    target = 8 * bullets / 100_000

    # The floor, timed in the same run on the same files: plain Python and sqlite3's executemany
    # into a scratch copy of the tables (memory/bench/import_reference.py). SQLite only.
    reference = reference_cpu = scratch = None
    if connection.vendor == "sqlite":
        scratch = copy_schema(connection, bench.tmpdir / "reference.sqlite3")
        written = 0

        def do_reference():
            nonlocal written
            written = reference_import(src, scratch)

        reference = bench.time(do_reference)
        reference_cpu = bench.last_cpu
        assert written == bullets, "the reference must write every bullet"
        bench.figure("reference: plain Python + sqlite3 executemany", reference, unit="s", cpu=reference_cpu)

    report = None

    def do_import():
        nonlocal report
        report = memory_import_tree(tree=read_tree(src), actor=actor)

    seconds = bench.time(do_import)
    assert report.added == bullets and not report.unparsed, "the generated tree must import whole"
    bench.figure(f"import {bullets:,} bullets ({files:,} files)", seconds, unit="s", target=target, cpu=bench.last_cpu)
    bench.figure("import throughput", bullets / seconds, unit="bullets/s")
    if reference:
        bench.figure("import ÷ reference (wall)", seconds / reference, unit="×", target=1.4)
        bench.figure("import ÷ reference (cpu)", bench.last_cpu / reference_cpu, unit="×", target=1.4)

    seconds = bench.time(lambda: memory_import_tree(tree=read_tree(src), actor=actor))
    bench.figure(
        "import again (idempotent, adds nothing)", seconds, unit="s", cpu=bench.last_cpu, target=2 * bullets / 100_000
    )

    # The export's floor: the reference's rows read back with sqlite3 and written as the same files
    # (memory/bench/export_reference.py), timed just before the export. SQLite only.
    if scratch is not None:
        reference_out = bench.tmpdir / "reference-export"
        reference = bench.time(lambda: reference_export(src, scratch, reference_out))
        reference_cpu = bench.last_cpu
        scratch.close()
        bench.figure("export reference: sqlite3, same renderer and writes", reference, unit="s", cpu=reference_cpu)

    out = bench.tmpdir / "export"
    export = None

    def do_export():
        nonlocal export
        export = export_tree(root=out)

    seconds = bench.time(do_export)
    bench.figure(
        f"export {export.count('written'):,} files", seconds, unit="s", cpu=bench.last_cpu, target=2 * files / 1_000
    )
    if scratch is not None:
        assert _same_files(reference_out, out), "the export reference must write the export's files"
        bench.figure("export ÷ reference (wall)", seconds / reference, unit="×", target=1.2)
        bench.figure("export ÷ reference (cpu)", bench.last_cpu / reference_cpu, unit="×", target=1.2)

    _compile_big_memory(bench, actor)


def _compile_big_memory(bench, actor):
    """One memory of 10,000 lessons: 1,000 core and 9,000 working, compiled uncached."""
    big = bench.tmpdir / "big"
    generate_tree(
        big, personas=1, projects=1, core_per_memory=bench.scaled(1_000), working_per_memory=bench.scaled(9_000), seed=7
    )
    (persona_dir,) = big.iterdir()
    persona_dir.rename(big / "Bench Big Memory")
    memory_import_tree(tree=read_tree(big), actor=actor)
    memory = Memory.objects.get(persona__name="Bench Big Memory")
    count = Lesson.objects.filter(memory=memory).count()
    compile_memory(memory)  # warm the connection and the code paths
    seconds = bench.time(lambda: compile_memory(memory), repeat=15)
    bench.figure(
        f"compile one memory of {count:,} lessons (median of 15)",
        seconds * 1000,
        unit="ms",
        target=5,
        cpu=bench.last_cpu * 1000,
    )
