"""Every main dashboard page at organisation scale, against the same page on the demo data.

Three stores are built once and kept (keyed by DATA_VERSION, so a second run reuses them): the demo
data alone; the demo plus 500 memories / 100,000 lessons; the demo plus 5,000 memories / 1,000,000
lessons. On SQLite they are files under var/bench/; on PostgreSQL, databases named after the configured
one (`<name>_dash_v<version>_<size>`). The lessons come in through the product's own importer (a
generated Night Watch tree, as the `files` bench makes), then history is added through the services
(edits and deletes), promotion detection runs on the memories (within a time budget at the large
size), compaction proposals are computed for some memories, and run and call logs are written.

Each page is fetched by a logged-in approver through Django's test client; the median server time is
compared with the same page on the demo data (targets: 2× at 100,000 lessons, 3× at 1,000,000) and
its HTML must stay under 1 MiB. `BENCH_DASHBOARD_SIZES=org` builds and times the 100,000-lesson size
only; `--scale` shrinks both sizes (the personas and projects of the generated tree).
"""

import os
import statistics
import time
from contextlib import ExitStack, contextmanager, suppress
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.core.cache import caches
from django.core.management import call_command
from django.db import connection, connections
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from memory.bench import benchmark

DATA_VERSION = 1
# personas × projects memories of 20 core and 180 working lessons each.
SIZES = {"org": (25, 20, 2.0), "org10": (50, 100, 3.0)}
HTML_LIMIT = 1024 * 1024
# A page that took longer than this at the smaller size is not fetched at the larger one (it is missed).
SLOW_PAGE_SECONDS = 20
DETECTION_BUDGET_SECONDS = 150
VAR = Path(settings.BASE_DIR) / "var" / "bench"


@contextmanager
def _database(key):
    """Store `key` opened (created empty when missing, started again when a build was cut short) and the
    default connection pointed at it; on leaving the outermost, back at the configured database."""
    conn = connections["default"]
    outermost = not stores
    configured = stores.setdefault("", (None, dict(conn.settings_dict)))[1]
    conn.close()
    conn.settings_dict.clear()
    conn.settings_dict.update(configured)
    if conn.vendor == "sqlite":
        VAR.mkdir(parents=True, exist_ok=True)
        name = str(VAR / f"dashboard-v{DATA_VERSION}-{key}.sqlite3")
    else:
        name = f"{configured['NAME']}_dash_v{DATA_VERSION}_{key}"
        with conn.cursor() as cursor:
            cursor.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name])
            if cursor.fetchone() is None:
                cursor.execute(f'CREATE DATABASE "{name}"')
        conn.close()
    stores[key] = (name, configured)
    try:
        _switch(key)
        if not _built():  # a build cut short is started again from nothing
            _drop(key)
            _switch(key)
        else:  # a store kept from an earlier run takes the migrations added since
            call_command("migrate", verbosity=0, interactive=False)
        yield name
    finally:
        if outermost:
            conn.close()
            conn.settings_dict.clear()
            conn.settings_dict.update(configured)
            stores.clear()
            _local_of_store.clear()
            _clear_caches()


stores = {}  # key -> (database name, the configured database's settings)


def _switch(key):
    """Point the default connection at store `key` (opened with _database)."""
    conn = connections["default"]
    name, original = stores[key]
    if conn.settings_dict.get("NAME") != name:
        conn.close()
        leaving = next((k for k, v in stores.items() if k and v[0] == conn.settings_dict.get("NAME")), None)
        conn.settings_dict.clear()
        conn.settings_dict.update({**original, "NAME": name})
        _clear_caches(keep_local_of=(leaving, key))


def _drop(key):
    conn = connections["default"]
    name, original = stores[key]
    conn.close()
    if conn.vendor == "sqlite":
        for suffix in ("", "-wal", "-shm"):
            Path(name + suffix).unlink(missing_ok=True)
        return
    conn.settings_dict.update(original)
    with conn.cursor() as cursor:
        cursor.execute(f'DROP DATABASE IF EXISTS "{name}"')
        cursor.execute(f'CREATE DATABASE "{name}"')
    conn.close()
    conn.settings_dict["NAME"] = None  # _switch reconnects to the store


_local_of_store = {}
PROCESS_CACHES = ("local",)


def _clear_caches(keep_local_of=None):
    """Empty the caches (ids mean other rows in another store). With `keep_local_of` = (store left, store
    entered), the process cache's contents are put aside for the store left and given back to the one
    entered, as a server of that one store would have them between requests."""
    if keep_local_of is not None:
        leaving, entering = keep_local_of
        for alias in PROCESS_CACHES:
            local = caches[alias]
            if leaving:
                _local_of_store[leaving, alias] = (dict(local._cache), dict(local._expire_info))
            local._cache.clear()
            local._expire_info.clear()
            kept, expiry = _local_of_store.get((entering, alias), ({}, {}))
            local._cache.update(kept)
            local._expire_info.update(expiry)
    for alias in settings.CACHES:
        if keep_local_of is not None and alias in PROCESS_CACHES:
            continue
        with suppress(Exception):
            caches[alias].clear()


def _built():
    with connection.cursor() as cursor:
        try:
            cursor.execute("SELECT version FROM nw_bench_marker")
        except Exception:
            return False
        return any(row[0] == DATA_VERSION for row in cursor.fetchall())


def _mark_built():
    with connection.cursor() as cursor:
        cursor.execute("CREATE TABLE IF NOT EXISTS nw_bench_marker (version integer)")
        cursor.execute("INSERT INTO nw_bench_marker (version) VALUES (%s)", [DATA_VERSION])


def _approver():
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group

    from memory.access import Role

    user, made = get_user_model().objects.get_or_create(
        username="bench-approver", defaults={"is_staff": True, "is_superuser": True}
    )
    if made:
        user.groups.add(Group.objects.get(name=Role.APPROVER))
    return user


def _build(bench, personas, projects):
    """Demo data, then (when `personas`) the generated tree and its history. Prints what it took."""
    from memory.demo.seed import seed_demo

    start = time.perf_counter()
    call_command("migrate", verbosity=0, interactive=False)
    with open(os.devnull, "w") as devnull:
        seed_demo(devnull)
    if personas:
        _grow(bench, personas, projects)
    _approver()
    # Statistics and visibility as autovacuum would leave them after a load this size: the planner needs
    # them to pick the indexes, and PostgreSQL index-only scans the visibility map.
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE" if connection.vendor == "postgresql" else "ANALYZE")
    _mark_built()
    bench.note(f"built {connection.settings_dict['NAME']} in {time.perf_counter() - start:,.0f} s")


def _grow(bench, personas, projects):
    from memory import services
    from memory.bench.files import generate_tree
    from memory.compaction.services import compaction_propose
    from memory.formats.importer import memory_import_tree
    from memory.formats.nightwatch import read_tree
    from memory.models import LLMCall, Memory, PipelineRun, RefinementRun
    from memory.promotions.services import promotion_detect

    actor = services.Actor.system("dashboard bench")
    src = bench.tmpdir / f"org-{personas}x{projects}"
    t = time.perf_counter()
    generate_tree(
        src, personas=personas, projects=projects, core_per_memory=20, working_per_memory=180, persona="Org Agent"
    )
    report = memory_import_tree(tree=read_tree(src), actor=actor)
    bench.note(f"imported {report.added:,} lessons in {time.perf_counter() - t:,.0f} s")

    memories = list(Memory.objects.filter(persona__name__startswith="Org Agent").order_by("id"))
    # History: every tenth memory gets five edits and two deletes, as people curating would.
    t = time.perf_counter()
    for memory in memories[::10]:
        lessons = list(memory.lessons.filter(tier="working").order_by("id")[:7])
        for lesson in lessons[:5]:
            services.lesson_update(lesson=lesson, actor=actor, reason="bench curation", text=lesson.text + " (checked)")
        for lesson in lessons[5:]:
            services.lesson_delete(lesson=lesson, actor=actor, reason="bench curation")
    bench.note(f"edited and deleted lessons of {len(memories[::10]):,} memories in {time.perf_counter() - t:,.0f} s")

    t = time.perf_counter()
    detected = 0
    for memory in memories:
        promotion_detect(memory=memory)
        detected += 1
        if time.perf_counter() - t > DETECTION_BUDGET_SECONDS:
            break
    bench.note(f"promotion detection on {detected:,} of {len(memories):,} memories in {time.perf_counter() - t:,.0f} s")

    t = time.perf_counter()
    for memory in memories[::20]:
        compaction_propose(memory=memory, actor=actor)
    bench.note(f"compaction proposals for {len(memories[::20]):,} memories in {time.perf_counter() - t:,.0f} s")

    now = timezone.now()
    runs, pipeline, calls = [], [], []
    for i, memory in enumerate(memories):
        when = now - timedelta(hours=i)
        runs.append(
            RefinementRun(
                memory=memory,
                status="completed" if i % 7 else "terminated",
                started_at=when,
                engine="offline",
                mass_before=4000,
                mass_after=3900,
                retention=0.97,
            )
        )
        if i % 2 == 0:
            pipeline.append(PipelineRun(memory=memory, status="completed", engine="offline"))
        calls += [
            LLMCall(
                persona_id=memory.persona_id,
                memory=memory,
                purpose=("reflection", "compaction", "refinement")[k],
                provider="anthropic",
                model_name="claude",
                tokens_in=1200,
                tokens_out=300,
                latency_ms=900,
            )
            for k in range(3)
        ]
    RefinementRun.objects.bulk_create(runs, batch_size=2000)
    PipelineRun.objects.bulk_create(pipeline, batch_size=2000)
    LLMCall.objects.bulk_create(calls, batch_size=2000)


def _pages():
    from memory.models import Memory

    memory = (
        Memory.objects.filter(persona__name__startswith="Org Agent")
        .select_related("persona", "project")
        .order_by("id")
        .first()
        or Memory.objects.select_related("persona", "project").order_by("id").first()
    )
    return {
        "home": reverse("home"),
        "promotions inbox": reverse("promotions:inbox"),
        "compactions": reverse("compaction-list"),
        "refinement runs": reverse("refinement:runs"),
        "pipeline runs": reverse("pipeline:runs"),
        "LLM calls": reverse("llm:calls"),
        "a memory page": reverse(
            "memory_detail", kwargs={"persona": memory.persona.name, "project": memory.project.slug}
        ),
        "its history": memory.history_url(),
        "admin persona list": reverse("admin:personas_persona_changelist"),
        "admin lesson list": reverse("admin:memory_lesson_changelist"),
    }


def _fetch(label, url):
    client = Client()
    client.force_login(_approver())
    response = client.get(url)
    assert response.status_code == 200, f"{label} answered {response.status_code}"
    return client, len(response.content)


def _time_pages(bench, demo_key, org_key, skip=()):
    """{page: (demo seconds, org seconds, org HTML bytes)}, medians of demo and org fetches taken in turn
    (demo, org, demo, org…) so that the machine's load falls on both alike. A page slower than
    SLOW_PAGE_SECONDS is fetched once at that size."""
    results = {}
    _switch(demo_key)
    labels = [label for label in _pages() if label not in skip]
    for label in labels:
        demo_times, org_times, size = [], [], 0
        for _ in range(3):
            _switch(demo_key)
            url = _pages()[label]
            client, _ = _fetch(label, url)
            demo_times.append(bench.time(lambda c=client, u=url: c.get(u)))
            _switch(org_key)
            url = _pages()[label]
            start = time.perf_counter()
            client, size = _fetch(label, url)
            first = time.perf_counter() - start
            if first > SLOW_PAGE_SECONDS:
                org_times.append(first)
                break
            org_times.append(bench.time(lambda c=client, u=url: c.get(u)))
        results[label] = (statistics.median(demo_times), statistics.median(org_times), size)
    return results


def _explain_slowest(bench, results, pages=3):
    """EXPLAIN (the plan only) of the slowest query behind each of the `pages` slowest pages timed."""
    from django.test.utils import CaptureQueriesContext

    client = Client()
    client.force_login(_approver())
    urls = _pages()
    for label in sorted(results, key=lambda k: -results[k][0])[:pages]:
        with CaptureQueriesContext(connection) as captured:
            client.get(urls[label])
        slowest = max(captured.captured_queries, key=lambda q: float(q["time"]))
        sql = slowest["sql"]
        prefix = "EXPLAIN QUERY PLAN " if connection.vendor == "sqlite" else "EXPLAIN "
        with connection.cursor() as cursor:
            cursor.execute(prefix + sql)
            plan = [" ".join(str(c) for c in row) for row in cursor.fetchall()]
        bench.note(
            f"{label}: {len(captured.captured_queries)} queries; slowest {float(slowest['time']) * 1000:.0f} ms: "
            f"{sql[:300]}{'…' if len(sql) > 300 else ''}"
        )
        for line in plan[:12]:
            bench.note(f"    {line}")


def _counts():
    from memory.models import Change, Lesson, Memory, PromotionCandidate

    return (
        f"{Memory.objects.count():,} memories, {Lesson.objects.count():,} lessons, "
        f"{Change.objects.count():,} changes, "
        f"{PromotionCandidate.objects.filter(status='pending').count():,} pending candidates"
    )


@benchmark("dashboard", "Every main page at 100,000 and 1,000,000 lessons against the demo data")
def run(bench):
    wanted = [s.strip() for s in os.environ.get("BENCH_DASHBOARD_SIZES", "org,org10").split(",") if s.strip()]
    # Pages left out (e.g. "home,promotions inbox" while they take minutes at organisation scale).
    skip = {s.strip() for s in os.environ.get("BENCH_DASHBOARD_SKIP", "").split(",") if s.strip()}
    vendor = connection.vendor
    suffix = "" if bench.scale == 1 else f"-s{bench.scale:g}".replace(".", "_")
    with ExitStack() as stack:
        name = stack.enter_context(_database("demo"))
        if not _built():
            _build(bench, 0, 0)
        bench.note(f"demo ({vendor}, {name}): {_counts()}")
        slow = set(skip)
        for size in wanted:
            personas, projects, target = SIZES[size]
            personas, projects = bench.scaled(personas), bench.scaled(projects)
            key = f"{size}{suffix}".replace("-", "_").replace(".", "_")
            name = stack.enter_context(_database(key))
            if not _built():
                _build(bench, personas, projects)
            bench.note(f"{size} ({vendor}, {name}): {_counts()}")
            timed = _time_pages(bench, "demo", key, skip=slow)
            _switch(key)
            if os.environ.get("BENCH_DASHBOARD_EXPLAIN", "1") != "0":
                _explain_slowest(bench, {k: (v[1], v[2]) for k, v in timed.items() if v[1] < SLOW_PAGE_SECONDS})
            bench.note(f"{'page':<20} {'demo':>9} {size:>10} {'ratio':>7} {'HTML':>10}")
            for label in _pages():
                if label not in timed:
                    why = "left out" if label in skip else f"over {SLOW_PAGE_SECONDS} s at the smaller size"
                    bench.note(f"{label:<20} not timed ({why})")
                    if label not in skip:
                        bench.figure(f"{size} {label}: time vs demo (not timed)", float("inf"), unit="×", target=target)
                    continue
                demo_seconds, org_seconds, org_bytes = timed[label]
                ratio = org_seconds / demo_seconds
                bench.note(
                    f"{label:<20} {demo_seconds * 1000:>7.0f}ms {org_seconds * 1000:>8.0f}ms {ratio:>6.1f}× "
                    f"{org_bytes / 1024:>8.0f}KiB"
                )
                bench.figure(f"{size} {label}: time vs demo", ratio, unit="×", target=target)
                bench.figure(f"{size} {label}: HTML", org_bytes / 1024, unit="KiB", target=HTML_LIMIT / 1024)
                if org_seconds > SLOW_PAGE_SECONDS:
                    slow.add(label)
