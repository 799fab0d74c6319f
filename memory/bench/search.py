"""Benchmark: the search page over an organisation's store, at `bench.scaled(100_000)` and
`bench.scaled(1_000_000)` lessons (200 lessons a memory: 500 and 5,000 memories of 4 and 25 teams).

The text is drawn from a Zipf-like vocabulary (function words in three languages first, then the trade's
words, then 20,000 rarer made-up words), so a query's words are as common as real ones are; refs point
into a tree per project (a dozen of 60 modules each, under src/, tests/, docs/, ...). A tenth of the
lessons is superseded or deleted. Each store is built once and kept, keyed by DATA_VERSION: a
SQLite file under var/bench/, or with DATABASE_URL a PostgreSQL database `<name>_search_v<version>_<n>`.
The lessons are written by the write path's bulk writer (COPY on PostgreSQL) and retired by its bulk
retirement, with their history.

Figures, for a site-wide viewer and for a lead who sees one team: p95 server time of /search/ for a
typical two-word query, two common words, a ref path prefix and a word under a ref prefix (target
100 ms), words no lesson holds together (the relaxed search, no target), its query count (for each kind
of search with a target the same at every size) and its HTML size (target 200 KiB).
The match counts are printed, and the page asking for nothing, timed in the same run. What keeping the
index costs an import is the `search-import` benchmark (memory/bench/search_import.py).
"""

import os
import random
import re
import statistics
import time
from contextlib import contextmanager
from datetime import date, timedelta
from itertools import accumulate
from pathlib import Path

from django.conf import settings
from django.core.management import call_command
from django.db import connection, connections, transaction

from memory.bench import benchmark

DATA_VERSION = 2
SIZES = (100_000, 1_000_000)
PER_MEMORY = 200
PERSONAS_PER_PROJECT = 10
MEMORIES_PER_TEAM = 200
MAX_MS = 100
MAX_HTML = 200 * 1024
PAGE_REPEAT = 40
VAR = Path(settings.BASE_DIR) / "var" / "bench"

VOCABULARY = [
    "refund",
    "retry",
    "invoice",
    "payment",
    "webhook",
    "cache",
    "queue",
    "worker",
    "migration",
    "lock",
    "index",
    "query",
    "timeout",
    "session",
    "token",
    "login",
    "throttle",
    "export",
    "import",
    "deploy",
    "rollback",
    "container",
    "build",
    "pipeline",
    "flaky",
    "test",
    "fixture",
    "database",
    "replica",
    "shard",
    "backup",
    "restore",
    "schema",
    "field",
    "column",
    "encoding",
    "timezone",
    "date",
    "locale",
    "translation",
    "email",
    "template",
    "render",
    "upload",
    "image",
    "resize",
    "thumbnail",
    "storage",
    "bucket",
    "secret",
    "config",
    "feature",
    "flag",
    "release",
    "version",
    "dependency",
    "lockfile",
    "Datenbank",
    "Abfrage",
    "Rechnung",
    "Zahlung",
    "Bestellung",
    "Benutzer",
    "Speicher",
    "Datei",
    "Fehler",
    "Zeitzone",
    "Versand",
    "Kunde",
    "consulta",
    "pago",
    "despliegue",
    "usuario",
    "correo",
    "cola",
    "servidor",
    "error",
    "fecha",
    "cliente",
    "traducción",
    "contraseña",
]


# Ranked by how often they occur: function words, then the trade's words (TRADE, then VOCABULARY), then
# made-up words (RARE of them). Weight of rank r: 1 / (r + 2.7).
FUNCTION_WORDS = [
    "the",
    "to",
    "a",
    "and",
    "of",
    "in",
    "is",
    "for",
    "on",
    "when",
    "with",
    "not",
    "be",
    "after",
    "it",
    "must",
    "der",
    "die",
    "und",
    "ist",
    "el",
    "la",
    "que",
    "de",
    "los",
    "before",
    "only",
    "every",
    "are",
    "without",
    "nicht",
    "mit",
    "para",
    "por",
    "una",
]
TRADE = [
    "deploy",
    "cache",
    "error",
    "timeout",
    "retry",
    "config",
    "version",
    "api",
    "request",
    "response",
    "user",
    "database",
    "query",
    "index",
    "migration",
    "worker",
    "queue",
    "lock",
    "session",
    "token",
    "release",
    "fixture",
    "schema",
    "refund",
    "webhook",
    "invoice",
    "payment",
    "stripe",
    "window",
    "idempotency",
    "signature",
    "billing",
    "charge",
]
RARE = 20_000
SYLLABLES = [
    "ka",
    "lo",
    "mi",
    "nu",
    "re",
    "sa",
    "ti",
    "vo",
    "ber",
    "dan",
    "fel",
    "gor",
    "hul",
    "jin",
    "kes",
    "lum",
    "mor",
    "nix",
    "pal",
    "quo",
    "rin",
    "sut",
    "tev",
    "wal",
    "yor",
    "zen",
]
# The two-word queries: a typical one (words of rank ~65) and two common ones (ranks 13 and 14: each in
# about one lesson in nine).
TYPICAL = "stripe webhook"
COMMON = "test build"
RELAXED = "stripe webhok retries"  # the typo matches nothing

MODULES = [
    "billing",
    "auth",
    "search",
    "api",
    "accounts",
    "orders",
    "payments",
    "invoices",
    "notifications",
    "email",
    "webhooks",
    "reports",
    "export",
    "imports",
    "users",
    "sessions",
    "cache",
    "queue",
    "workers",
    "scheduler",
    "storage",
    "uploads",
    "media",
    "images",
    "pdf",
    "i18n",
    "settings",
    "admin",
    "audit",
    "logging",
    "metrics",
    "tracing",
    "health",
    "flags",
    "experiments",
    "pricing",
    "tax",
    "shipping",
    "inventory",
    "catalog",
    "cart",
    "checkout",
    "refunds",
    "subscriptions",
    "plans",
    "coupons",
    "ledger",
    "sync",
    "mobile",
    "web",
    "cli",
    "sdk",
    "db",
    "migrations",
    "fixtures",
    "utils",
    "core",
    "common",
    "integrations",
    "slack",
    "github",
]
TOPS = (("src", 13), ("tests", 4), ("docs", 1), ("scripts", 1), ("infra", 1))
SUBS = ["handlers", "models", "views", "services", "tasks", "client", "api", "utils", "schemas", "forms"]
FILES = [
    "models",
    "views",
    "services",
    "tasks",
    "utils",
    "client",
    "handlers",
    "api",
    "schema",
    "forms",
    "urls",
    "admin",
    "retry",
    "config",
    "errors",
]
EXTS = ("py", "py", "py", "ts", "go", "md")
# The ref prefixes measured: a module found in about a fifth of the projects, and one folder below it.
REF_PREFIX = "src/billing/"
WORD_UNDER_REF = ("refund", "src/billing/")


def _vocabulary(rng):
    words = [*FUNCTION_WORDS[:12], *COMMON.split(), *FUNCTION_WORDS[12:], *TRADE]
    words += [w.lower() for w in VOCABULARY if w.lower() not in words]
    seen = set(words)
    while len(words) < RARE:
        word = "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4)))
        if word not in seen:
            seen.add(word)
            words.append(word)
    return words, list(accumulate(1 / (rank + 2.7) for rank in range(1, len(words) + 1)))


def _project_tree(rng, billing):
    """A project's files: a dozen modules (billing among them when `billing`), a few folders and files in each."""
    paths = []
    others = rng.sample([m for m in MODULES if m != "billing"], 11)
    for module in [*others, "billing" if billing else rng.choice(MODULES[1:])]:
        for _ in range(rng.randint(6, 24)):
            top = rng.choices([t for t, _ in TOPS], [w for _, w in TOPS])[0]
            sub = f"{rng.choice(SUBS)}/" if rng.random() < 0.5 else ""
            paths.append(f"{top}/{module}/{sub}{rng.choice(FILES)}.{rng.choice(EXTS)}")
    return sorted(set(paths))


@contextmanager
def _store(n):
    """The default connection pointed at the kept store of `n` lessons (created when missing), migrated;
    back at the configured database afterwards."""
    conn = connections["default"]
    configured = dict(conn.settings_dict)
    conn.close()
    if conn.vendor == "sqlite":
        VAR.mkdir(parents=True, exist_ok=True)
        name = str(VAR / f"search-v{DATA_VERSION}-{n}.sqlite3")
    else:
        name = f"{configured['NAME']}_search_v{DATA_VERSION}_{n}"
        with conn.cursor() as cursor:
            cursor.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name])
            if cursor.fetchone() is None:
                cursor.execute(f'CREATE DATABASE "{name}"')
        conn.close()
    conn.settings_dict["NAME"] = name
    try:
        call_command("migrate", verbosity=0, interactive=False)
        yield name
    finally:
        conn.close()
        conn.settings_dict.clear()
        conn.settings_dict.update(configured)


def _built(n):
    with connection.cursor() as cursor:
        cursor.execute("CREATE TABLE IF NOT EXISTS nw_search_bench (version integer, lessons integer)")
        cursor.execute("SELECT count(*) FROM nw_search_bench WHERE version = %s AND lessons = %s", [DATA_VERSION, n])
        return cursor.fetchone()[0] > 0


def _build(bench, n):
    """The organisation (teams, projects, personas, memories) and its `n` lessons, unless built already."""
    from memory import services
    from memory.models import ChangeBatch, Lesson, Memory
    from memory.refs import Ref
    from personas.models import Persona, Project, Team

    if _built(n):
        return
    if Lesson.objects.exists():
        raise RuntimeError(f"{connection.settings_dict['NAME']} holds lessons but no finished build: drop it")
    started = time.perf_counter()
    rng = random.Random(38)
    words, weights = _vocabulary(rng)
    memories_n = max(4, n // PER_MEMORY)
    projects_n = max(1, memories_n // PERSONAS_PER_PROJECT)
    teams_n = max(4, memories_n // MEMORIES_PER_TEAM)
    teams = Team.objects.bulk_create(
        [Team(name=f"Team {t:02d}", slug=f"search-bench-team-{t}") for t in range(teams_n)]
    )
    projects = Project.objects.bulk_create(
        [Project(name=f"Project {p:03d}", slug=f"search-bench-{p}", team=teams[p % teams_n]) for p in range(projects_n)]
    )
    personas = Persona.objects.bulk_create(
        [Persona(name=f"Persona {p:03d}", role="Engineer") for p in range(max(PERSONAS_PER_PROJECT, projects_n // 2))]
    )
    pairs = [
        Memory(persona=personas[(p * 7 + k * 13) % len(personas)], project=project)
        for p, project in enumerate(projects)
        for k in range(PERSONAS_PER_PROJECT)
    ]
    memories = Memory.objects.bulk_create(pairs)
    trees = {project.pk: _project_tree(rng, p % 5 == 0) for p, project in enumerate(projects)}
    actor = services.Actor.system("search bench")
    first_day = date(2024, 1, 1)
    chunk = 100  # memories per transaction
    for at in range(0, len(memories), chunk):
        part = memories[at : at + chunk]
        with transaction.atomic():
            batches = services.batches_create(
                [services.batch_build(memory=m, kind=ChangeBatch.Kind.IMPORT, actor=actor) for m in part]
            )
            rows = []
            for memory, batch in zip(part, batches):
                tree = trees[memory.project_id]
                for i in range(n // len(memories)):
                    refs = [Ref(path, rng.randint(1, 400), None) for path in rng.sample(tree, rng.choice((0, 1, 1, 2)))]
                    text = " ".join(rng.choices(words, cum_weights=weights, k=rng.randint(8, 24)))
                    if refs and rng.random() < 0.3:
                        text += f" in {refs[0].path}"
                    core = i % 10 == 0
                    rows.append(
                        services.NewLesson(
                            batch_id=batch.pk,
                            memory_id=memory.pk,
                            tier="core" if core else "working",
                            category=rng.choice(("PATTERN", "DECISION")) if core else "OBSERVATION",
                            text=text.capitalize() + ".",
                            lesson_date=first_day + timedelta(days=rng.randrange(700)),
                            section=i // 5,
                            refs=refs,
                        )
                    )
            ids = services.lessons_bulk_create(rows)
            _retire_a_tenth(rows, ids, dict(zip((m.pk for m in part), batches)))
    with connection.cursor() as cursor:
        cursor.execute("INSERT INTO nw_search_bench (version, lessons) VALUES (%s, %s)", [DATA_VERSION, n])
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE" if connection.vendor == "postgresql" else "ANALYZE")
    bench.note(
        f"built {connection.settings_dict['NAME']}: {n:,} lessons in {len(memories):,} memories of {len(projects):,}"
        f" projects, {len(personas):,} personas, {teams_n} teams, in {time.perf_counter() - started:,.0f} s"
    )


def _retire_a_tenth(rows, ids, batches):
    """A tenth of the lessons left their memory through the write path: one in twenty superseded by
    the lesson written after it in the same memory, one in twenty deleted, each memory's in its batch."""
    from memory import services
    from memory.models import Lesson

    retired: dict[int, list] = {}
    for k, (row, lesson_id) in enumerate(zip(rows, ids)):
        if k % 20 == 3 and k + 1 < len(rows) and rows[k + 1].memory_id == row.memory_id:
            retired.setdefault(row.memory_id, []).append((lesson_id, row.refs, ids[k + 1]))
        elif k % 20 == 13:
            retired.setdefault(row.memory_id, []).append((lesson_id, row.refs, None))
    lessons = Lesson.objects.in_bulk([lesson_id for chosen in retired.values() for lesson_id, _, _ in chosen])
    for memory_id, chosen in retired.items():
        services.lessons_bulk_retire(
            batch=batches[memory_id],
            retired=[(lessons[lesson_id], refs, successor) for lesson_id, refs, successor in chosen],
        )


def _people():
    """A site-wide viewer and the lead of the first team (a viewer there)."""
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group

    from memory.access import Role
    from memory.roles import ensure_role_groups
    from personas.models import Membership, Team

    ensure_role_groups()
    users = get_user_model().objects
    viewer, made = users.get_or_create(username="bench-search-viewer")
    if made:
        viewer.groups.add(Group.objects.get(name=Role.VIEWER))
    lead, made = users.get_or_create(username="bench-search-lead")
    if made:
        Membership.objects.create(user=lead, team=Team.objects.order_by("pk").first(), role=Role.VIEWER)
    return viewer, lead


def _backend_cpu():
    """(PostgreSQL backend pid, its CPU seconds so far) of the default connection, or None (SQLite: the
    database works in this process, so process_time counts it)."""
    if connection.vendor != "postgresql":
        return None
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:  # a server on another machine
        return None
    return pid, (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _timed(client, params):
    """(wall ms of each fetch, CPU ms a fetch) of PAGE_REPEAT fetches of GET /search/ with params, after one."""
    client.get("/search/", params)  # warm
    timings = []
    before, cpu = _backend_cpu(), time.process_time()
    for _ in range(PAGE_REPEAT):
        start = time.perf_counter()
        response = client.get("/search/", params)
        timings.append((time.perf_counter() - start) * 1000)
        assert response.status_code == 200, response.status_code
    cpu = time.process_time() - cpu
    after = _backend_cpu()
    if before and after and before[0] == after[0]:  # the same connection throughout
        cpu += after[1] - before[1]
    return timings, cpu * 1000 / PAGE_REPEAT


def _measure(client, params):
    """(p95 ms, median ms, CPU ms a request, queries, bytes, the count shown) of GET /search/ with params.

    CPU: this process's (the app, and SQLite) plus the PostgreSQL backend's, over the repeats. Unlike the
    wall time it hardly grows when other work shares the machine's cores."""
    from django.test.utils import CaptureQueriesContext

    timings, cpu_ms = _timed(client, params)
    with CaptureQueriesContext(connection) as queries:
        response = client.get("/search/", params)
    assert b"search-hit" in response.content, params
    shown = int(re.search(rb'class="search-count"[^>]*><strong>([\d,]+)', response.content)[1].replace(b",", b""))
    p95 = statistics.quantiles(timings, n=20)[-1]
    return p95, statistics.median(timings), cpu_ms, len(queries.captured_queries), len(response.content), shown


def _pages(bench, n):
    from django.test import Client

    from memory.models import Lesson

    viewer, lead = _people()
    lessons = Lesson.objects.count()
    kinds = [
        ("two words", {"q": TYPICAL}, MAX_MS),
        ("two common words", {"q": COMMON}, MAX_MS),
        ("ref prefix", {"ref": REF_PREFIX}, MAX_MS),
        ("word under a ref prefix", {"q": WORD_UNDER_REF[0], "ref": WORD_UNDER_REF[1]}, MAX_MS),
        # No lesson holds every word (a typo): the page asks again for lessons holding some of them, and
        # ranks every lesson holding any. No target: this is the slow path, measured to be known.
        ("words no lesson holds together", {"q": RELAXED}, None),
    ]
    counts = {}
    for who, user in (("site-wide", viewer), ("one team's lead", lead)):
        client = Client()
        client.force_login(user)
        # The floor: the same page asking for nothing (the nav, the form and its menus), in the same run.
        timings, cpu = _timed(client, {})
        bench.note(
            f"{who}, the page with no search: median {statistics.median(timings):.0f} ms,"
            f" p95 {statistics.quantiles(timings, n=20)[-1]:.0f} ms, CPU {cpu:.0f} ms a request"
        )
        for label, params, target in kinds:
            p95, median, cpu, queries, size, shown = _measure(client, params)
            counts.setdefault((who, label, target is not None), set()).add(queries)
            shown_params = " ".join(f"{k}={v!r}" for k, v in params.items())
            bench.figure(f"{n:,} lessons, {who}, {label}: p95", p95, unit="ms", target=target)
            bench.note(
                f"{shown_params}: {shown:,} of {lessons:,} lessons match; median {median:.0f} ms, CPU"
                f" {cpu:.0f} ms a request (app and database), {queries} queries, {size / 1024:.0f} KiB"
            )
            bench.figure(f"{n:,} lessons, {who}, {label}: HTML", size / 1024, unit="KiB", target=MAX_HTML / 1024)
    return counts


@benchmark("search", "Search at 100,000 and 1,000,000 lessons: page time, CPU, queries, size")
def bench_search(bench):
    queries = {}
    for size in SIZES:
        n = bench.scaled(size, 400)
        with _store(n):
            _build(bench, n)
            for kind, seen in _pages(bench, n).items():  # (who, label, has a target): the query counts
                queries.setdefault(kind, set()).update(seen)
    # Each kind of search with a target makes the same queries at every size. (Kinds differ a little:
    # a lead reads their memberships once more, SQLite counts a search's words in its index.) The
    # relaxed search, the slow path, depends on what the store holds: it asks its summary again, on
    # PostgreSQL within a savepoint of its own, and first once more with every prefix when one of its
    # words is widespread (memory/search/prefixes.py), as `stripe` is at a million lessons and not at
    # 100,000.
    widest = max(len(seen) for (_, _, targeted), seen in queries.items() if targeted)
    bench.figure("query counts seen per kind of search across sizes (1: always the same)", widest, target=1)
    for (who, label, _), seen in queries.items():
        bench.note(f"{who}, {label}: {', '.join(map(str, sorted(seen)))} queries a page")
