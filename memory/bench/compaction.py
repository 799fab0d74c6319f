"""Benchmark of the compaction review: a 150-line working memory, proposed offline, reviewed, applied
(as it was proposed, and again after agents appended 100 lessons while it waited for review).

`run(report)` calls `report(name, value, unit, budget)` for each figure (budget None when there is
none). Everything is created in a transaction that is rolled back, so the database is left as it was.
Run alone with: python -m memory.bench.compaction
"""

import statistics
import time
from datetime import date, timedelta

from memory.bench import benchmark

REVIEW_BUDGET_MS = 200
APPLY_BUDGET_MS = 200
LINES = 150
APPENDED = 100
REPEAT = 15


class _Rollback(Exception):
    pass


def _ms(start):
    return (time.perf_counter() - start) * 1000


def _seed(memory, actor):
    from memory import services

    areas = ["auth", "queue", "reports", "upload", "scheduler", "billing", "search"]
    for i in range(LINES):
        area = areas[i % len(areas)]
        services.lesson_create(
            memory=memory,
            actor=actor,
            text=f"{area.title()} finding {i % 100}: handler {i % 100} in src/{area}/mod_{i % 100}.py needs attention",
            category=["OBSERVATION", "HYPOTHESIS", "TODO"][i % 3],
            refs=f"src/{area}/mod_{i % 100}.py#L{i + 1}-L{i + 12}",
            relevance=["low", "medium", "high"][i % 3],
            lesson_date=date(2026, 1, 1) + timedelta(days=i % 60),
        )


def _append(memory, count):
    """`count` lessons appended through the agent API's service, 20 per call as the API allows."""
    from memory.api.services import agent_lessons_append
    from memory.models import AgentToken

    token = AgentToken.objects.create(persona=memory.persona, prefix="nwm_bench", token_hash="b" * 64)
    for first in range(0, count, 20):
        agent_lessons_append(
            memory=memory,
            token=token,
            items=[
                {"tool": "log_learning", "text": f"Appended while the proposal waited: note {i} on src/late/mod_{i}.py"}
                for i in range(first, min(first + 20, count))
            ],
        )


def _timed_apply(proposal, actor, repeat=5):
    """Median milliseconds of an apply, each rolled back afterwards so the proposal can be applied again."""
    from django.db import transaction

    from memory.compaction.services import compaction_apply

    timings = []
    for _ in range(repeat):
        try:
            with transaction.atomic():
                start = time.perf_counter()
                compaction_apply(proposal=proposal, actor=actor)
                timings.append(_ms(start))
                raise _Rollback
        except _Rollback:
            pass
    return round(statistics.median(timings), 1)


@benchmark("compaction", "Compaction of a 150-lesson working memory and its review page")
def bench_compaction(bench):
    run(lambda name, value, unit, budget: bench.figure(name, value, unit=unit, target=budget))


def run(report):
    from django.contrib.auth import get_user_model
    from django.db import transaction
    from django.test import Client
    from django.urls import reverse

    from memory import services
    from memory.compaction.services import compaction_propose
    from memory.models import Memory
    from personas.models import Persona, Project

    try:
        with transaction.atomic():
            persona = Persona.objects.create(name="Bench compaction persona", role="QA Engineer")
            project = Project.objects.create(slug="bench-compaction", name="Bench compaction")
            memory = Memory.objects.create(persona=persona, project=project)
            user = get_user_model().objects.create_superuser("bench-compaction", password=None)
            actor = services.Actor.for_user(user)
            _seed(memory, actor)

            start = time.perf_counter()
            proposal = compaction_propose(memory=memory, actor=actor)
            report("compaction: offline proposal for 150 lessons", round(_ms(start), 1), "ms", None)
            report("compaction: proposed lines", proposal.lines.count(), "lines", memory.compaction_target_lines)

            client = Client()
            client.force_login(user)
            url = reverse("compaction-detail", args=[proposal.pk])
            client.get(url)  # warm templates and URL resolvers
            timings = []
            for _ in range(REPEAT):
                start = time.perf_counter()
                response = client.get(url)
                timings.append(_ms(start))
                assert response.status_code == 200
            report(
                "compaction: review page, 150 lessons (median)",
                round(statistics.median(timings), 1),
                "ms",
                REVIEW_BUDGET_MS,
            )
            report("compaction: review page, 150 lessons (max)", round(max(timings), 1), "ms", None)

            _timed_apply(proposal, actor, repeat=1)  # warm, as the review page is warmed above
            report(
                "compaction: apply, full history, 0 lessons appended since the proposal (median)",
                _timed_apply(proposal, actor),
                "ms",
                APPLY_BUDGET_MS,
            )
            _append(memory, APPENDED)
            report(
                f"compaction: apply, full history, {APPENDED} lessons appended since the proposal (median)",
                _timed_apply(proposal, actor),
                "ms",
                APPLY_BUDGET_MS,
            )
            raise _Rollback
    except _Rollback:
        pass


def _print(name, value, unit, budget):
    verdict = "" if budget is None else ("  ok" if value <= budget else "  OVER BUDGET") + f" (budget {budget} {unit})"
    print(f"{name}: {value} {unit}{verdict}")


if __name__ == "__main__":
    import os

    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "nightwatch.settings")
    django.setup()
    run(_print)
