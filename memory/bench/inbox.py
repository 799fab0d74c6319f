"""Benchmark: the promotion inbox page on the demo data, then with ~9,400 pending candidates over 500
more memories; the page must stay within twice its time on the demo data, under 1 MiB, with the
same number of queries.

The demo data comes from `seed_demo` (with a detection run so its candidates exist). The large
inbox adds 50 personas × 10 projects and 18–19 pending candidates per memory, written in bulk: the
page reads candidates, their memory and the memory's core lessons, so that is what is made (each
candidate's evidence names working lessons it does not need to read).
"""

import statistics
import time

from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django.test import Client
from django.test.utils import CaptureQueriesContext, override_settings
from django.urls import reverse
from django.utils import timezone

from memory.bench import benchmark

CANDIDATES = 9_400
MEMORIES = 500
REPEAT = 9


class _Rollback(Exception):
    pass


def _page(client, url):
    """(median ms, bytes, queries) of GET url."""
    client.get(url)  # warm templates, permission cache
    timings = []
    for _ in range(REPEAT):
        start = time.perf_counter()
        response = client.get(url)
        timings.append((time.perf_counter() - start) * 1000)
        assert response.status_code == 200, response.status_code
    with CaptureQueriesContext(connection) as queries:
        response = client.get(url)
    return statistics.median(timings), len(response.content), len(queries.captured_queries)


def _grow(n_memories, n_candidates):
    """n_memories more memories (personas × projects), each with a core lesson, and n_candidates
    pending candidates spread over them, oldest first."""
    from memory import services
    from memory.models import Memory, PromotionCandidate
    from personas.models import Persona, Project

    n_projects = 10
    n_personas = max(1, n_memories // n_projects)
    personas = Persona.objects.bulk_create(
        [Persona(name=f"Bench persona {i}", role="Engineer") for i in range(n_personas)]
    )
    projects = Project.objects.bulk_create(
        [
            Project(slug=f"bench-inbox-{i}", name=f"Bench project {i}", folder_name=f"bench-inbox-{i}")
            for i in range(n_projects)
        ]
    )
    memories = Memory.objects.bulk_create([Memory(persona=p, project=q) for p in personas for q in projects])
    if memories[0].pk is None:
        memories = list(Memory.objects.filter(project__in=projects).order_by("id"))
    user = get_user_model().objects.create_user("bench-inbox-writer", password=None)
    actor = services.Actor.for_user(user)
    for memory in memories[: min(len(memories), 50)]:  # some memories with core lessons, as in use
        services.lesson_create(
            memory=memory,
            tier="core",
            category="DECISION",
            actor=actor,
            text="Settlement runs nightly from jobs/settle.py",
            refs="jobs/settle.py#L3",
        )
    now = timezone.now()
    PromotionCandidate.objects.bulk_create(
        [
            PromotionCandidate(
                memory=memories[i % len(memories)],
                category="PATTERN",
                text=f"Bench lesson {i}: verify the webhook signature before parsing the payload",
                refs=["src/billing/webhooks.py#L10-L30"],
                evidence={"lessons": [1, 2, 3], "confirmations": []},
                fingerprint=f"bench-{i}",
                distinct_dates=3,
                engine="offline",
                detector="words-3",
                created_at=now - timezone.timedelta(minutes=n_candidates - i),
            )
            for i in range(n_candidates)
        ],
        batch_size=1000,
    )


@benchmark("inbox", "Promotion inbox page: demo data, then ~9,400 pending candidates over 500 memories")
def run(bench):
    from memory.access import Role
    from memory.demo.seed import seed_demo
    from memory.promotions.services import detection_targets, promotion_detect
    from memory.roles import ensure_role_groups

    n_candidates, n_memories = bench.scaled(CANDIDATES, 20), bench.scaled(MEMORIES, 10)
    try:
        # The demo's git checkout goes to the bench's scratch folder, removed afterwards.
        with override_settings(DEMO_CHECKOUT_DIR=str(bench.tmpdir / "demo")), transaction.atomic():
            from io import StringIO

            from django.contrib.auth.models import Group

            seed_demo(StringIO())
            for memory in detection_targets():
                promotion_detect(memory=memory)
            ensure_role_groups()
            user = get_user_model().objects.create_user("bench-inbox", password=None)
            user.groups.add(Group.objects.get(name=Role.APPROVER))
            client = Client()
            client.force_login(user)
            url = reverse("promotions:inbox")
            from memory.models import PromotionCandidate

            demo_pending = PromotionCandidate.objects.filter(status="pending").count()
            demo_ms, demo_bytes, demo_queries = _page(client, url)
            bench.figure(f"inbox on the demo data ({demo_pending} pending), median", demo_ms, unit="ms")

            _grow(n_memories, n_candidates)
            if connection.vendor == "postgresql":
                # A live database has its statistics kept by autovacuum; rows bulk-inserted a moment ago
                # do not yet, and the planner would guess as for an empty table.
                with connection.cursor() as cursor:
                    cursor.execute("ANALYZE memory_promotioncandidate, memory_memory, memory_lesson")
            pending = PromotionCandidate.objects.filter(status="pending").count()
            big_ms, big_bytes, big_queries = _page(client, url)
            bench.figure(f"inbox with {pending:,} pending over {n_memories} more memories, median", big_ms, unit="ms")
            bench.figure("time with many pending ÷ time on the demo data", big_ms / demo_ms, unit="×", target=2.0)
            bench.figure("page size with many pending", big_bytes / 1024, unit="KiB", target=1024)
            bench.figure(
                "queries with many pending − on the demo data", big_queries - demo_queries, unit="queries", target=0
            )
            last_ms, _, _ = _page(client, url + "?page=last")
            bench.figure("its last page (the newest candidates), median", last_ms, unit="ms")
            filtered_ms, _, _ = _page(client, url + "?kind=recurring&age=1")
            bench.figure("filtered by kind and waiting time, median", filtered_ms, unit="ms")
            bench.note(
                f"demo page {demo_bytes / 1024:.0f} KiB, {demo_queries} queries; "
                f"large page {big_bytes / 1024:.0f} KiB, {big_queries} queries"
            )
            raise _Rollback
    except _Rollback:
        pass
