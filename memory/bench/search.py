"""Benchmark: search over `bench.scaled(100_000)` lessons in 20 memories of 4 teams.

Figures: p95 server time of the search page for a two-word query and for a ref path prefix (a site-
wide viewer, so every memory is searched), its query count and HTML size. What keeping the index
costs an import is the `search-import` benchmark (memory/bench/search_import.py).
"""

import random
import statistics
import time
from datetime import date

from django.db import connection, transaction

from memory.bench import benchmark

LESSONS = 100_000
REPEAT = 20
TEAMS, PERSONAS, PROJECTS = 4, 4, 5

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
FILLER = [
    "the",
    "a",
    "is",
    "are",
    "must",
    "be",
    "when",
    "after",
    "before",
    "with",
    "without",
    "for",
    "in",
    "of",
    "on",
    "to",
    "and",
    "not",
    "only",
    "every",
]


class _Rollback(Exception):
    pass


def _text(rng, i):
    words = [rng.choice(VOCABULARY if rng.random() < 0.45 else FILLER) for _ in range(rng.randint(8, 22))]
    if i % 7 == 0:
        words.insert(rng.randrange(len(words)), f"src/pkg{i % 50}/module_{i % 400}.py")
    return " ".join(words).capitalize() + f" (note {i})."


def _import(memories, n, rng, start):
    """Bulk-create n lessons spread over the memories, as an import does (one batch per memory)."""
    from memory import services
    from memory.models import ChangeBatch
    from memory.refs import Ref
    from memory.services import NewLesson

    actor = services.Actor.system("bench")
    batches = {m.pk: services.batch_create(memory=m, kind=ChangeBatch.Kind.IMPORT, actor=actor) for m in memories}
    today, rows = date(2026, 1, 1), []
    for i in range(start, start + n):
        memory = memories[i % len(memories)]
        refs = [Ref(f"src/pkg{i % 50}/module_{i % 400}.py", 1 + i % 90, None)] if i % 2 else []
        rows.append(
            NewLesson(batches[memory.pk].pk, memory.pk, "working", "OBSERVATION", _text(rng, i), today, i, refs=refs)
        )
    started = time.perf_counter()
    services.lessons_bulk_create(rows)
    return time.perf_counter() - started


def _world():
    from memory import services
    from personas.models import Persona, Project, Team

    teams = [Team.objects.create(name=f"Bench search team {t}", slug=f"bench-search-{t}") for t in range(TEAMS)]
    personas = [Persona.objects.create(name=f"Bench searcher {p}", role="Engineer") for p in range(PERSONAS)]
    projects = [
        Project.objects.create(slug=f"bench-search-{p}", name=f"Bench search {p}", team=teams[p % TEAMS])
        for p in range(PROJECTS)
    ]
    return [services.memory_get_or_create(persona=pe, project=pr) for pe in personas for pr in projects]


def _page(client, params):
    """(p95 ms, median ms, queries, bytes) of GET /search/ with params."""
    from django.test.utils import CaptureQueriesContext

    client.get("/search/", params)  # warm
    timings = []
    for _ in range(REPEAT):
        start = time.perf_counter()
        response = client.get("/search/", params)
        timings.append((time.perf_counter() - start) * 1000)
        assert response.status_code == 200, response.status_code
    with CaptureQueriesContext(connection) as queries:
        response = client.get("/search/", params)
    assert b"search-hit" in response.content, params
    p95 = statistics.quantiles(timings, n=20)[-1]
    return p95, statistics.median(timings), len(queries.captured_queries), len(response.content)


@benchmark("search", "Search over 100,000 lessons: page time, queries, size")
def bench_search(bench):
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group
    from django.test import Client

    from memory.access import Role
    from memory.roles import ensure_role_groups

    rng = random.Random(7)
    n = bench.scaled(LESSONS, 200)
    try:
        with transaction.atomic():
            memories = _world()
            seconds = _import(memories, n, rng, 0)
            bench.note(f"{n:,} lessons bulk-created in {seconds:.1f} s, index kept")
            if connection.vendor == "postgresql":
                with connection.cursor() as cursor:
                    cursor.execute("ANALYZE memory_lesson, memory_lessonref, memory_memory")
            ensure_role_groups()
            user = get_user_model().objects.create_user("bench-search", password=None)
            user.groups.add(Group.objects.get(name=Role.VIEWER))
            client = Client()
            client.force_login(user)
            for label, params in [
                ("two words 'refund timeout'", {"q": "refund timeout"}),
                ("ref path prefix 'src/pkg7/'", {"ref": "src/pkg7/"}),
                ("a word under a ref prefix", {"q": "refund", "ref": "src/pkg7/"}),
            ]:
                p95, median, queries, size = _page(client, params)
                bench.figure(f"search page, {label}: p95", p95, unit="ms", target=500)
                bench.note(f"{label}: median {median:.0f} ms, {queries} queries, {size / 1024:.0f} KiB")
            raise _Rollback
    except _Rollback:
        pass
