"""Benchmark: webhook delivery to a receiver on this machine.

Two figures: how many events one worker sends per second (events already in the outbox, the worker's
pass fanning them out and posting each), and how long a decision takes to reach the receiver (from
just before the decision's transaction commits to the receiver reading the request), p50 and p99.
Without a broker the send runs in-process after the commit, as on the default path; with a worker it
adds the broker's hop.
"""

import statistics
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from django.db import transaction
from django.test.utils import override_settings

from memory.bench import benchmark

EVENTS = 1_000
DECISIONS = 100


class _Receiver(BaseHTTPRequestHandler):
    arrivals: dict = {}

    def do_POST(self):
        length = int(self.headers.get("Content-Length", 0))
        self.rfile.read(length)
        self.arrivals[self.headers["webhook-id"]] = time.perf_counter()
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args):
        pass


def _seed(team_label):
    from memory.models import Memory
    from personas.models import Persona, Project, Team

    team = Team.objects.create(name=f"Bench webhooks {team_label}", slug=f"bench-webhooks-{team_label}")
    persona = Persona.objects.create(name=f"Bench webhooks persona {team_label}", role="QA Engineer", team=team)
    project = Project.objects.create(slug=f"bench-webhooks-{team_label}", name="Bench webhooks", team=team)
    return Memory.objects.create(persona=persona, project=project)


def _candidates(memory, n):
    from django.utils import timezone

    from memory import services
    from memory.models import ChangeBatch, PromotionCandidate
    from memory.promotions.candidates import insert_candidates

    now = timezone.now()
    with transaction.atomic():
        batch = services.batch_create(memory=memory, kind=ChangeBatch.Kind.IMPORT, actor=services.Actor.system("bench"))
        ids = services.lessons_bulk_create(
            [
                services.NewLesson(batch.pk, memory.pk, "working", "PATTERN", f"Bench lesson {i}", now.date(), i)
                for i in range(n)
            ]
        )
        rows = [
            PromotionCandidate(
                memory=memory,
                text=f"Bench lesson {i}",
                category="PATTERN",
                evidence={"lessons": [lesson_id], "confirmations": []},
                fingerprint=f"bench-{lesson_id}",
                supporting_state={str(lesson_id): {"hash": ""}},
                distinct_dates=3,
                engine="bench",
                created_at=now,
            )
            for i, lesson_id in enumerate(ids)
        ]
        return insert_candidates(memory, rows, now)


@benchmark("webhooks", "Webhook delivery: events per second per worker, decision to delivery")
def run(bench):
    from memory import services
    from memory.webhooks.services import webhook_endpoint_create, webhooks_dispatch

    server = ThreadingHTTPServer(("127.0.0.1", 0), _Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/hook"
    try:
        with override_settings(WEBHOOKS_ALLOW_PRIVATE=True, CELERY_TASK_ALWAYS_EAGER=True):
            memory = _seed("throughput")
            webhook_endpoint_create(team=memory.project.team, url=url, event_types=["review.waiting"])
            n = bench.scaled(EVENTS, minimum=20)
            from memory.models import WebhookEvent

            # Straight into the outbox (as a backlog a worker finds), not sent as each commits.
            WebhookEvent.objects.bulk_create(
                WebhookEvent(type="review.waiting", memory_id=memory.pk, data={"count": 1, "items": [{"id": i}]})
                for i in range(n)
            )
            _Receiver.arrivals.clear()
            cpu, start = time.process_time(), time.perf_counter()
            while len(_Receiver.arrivals) < n:
                if not webhooks_dispatch(limit=500):
                    break
            seconds = time.perf_counter() - start
            bench.figure(
                f"{n:,} events sent by one worker", n / seconds, unit="events/s", target=100, higher_is_better=True
            )
            bench.note(f"one worker, one connection per delivery; {time.process_time() - cpu:.2f} s of CPU for {n:,}")

            memory = _seed("latency")
            webhook_endpoint_create(team=memory.project.team, url=url, event_types=["review.decided"])
            candidates = _candidates(memory, bench.scaled(DECISIONS, minimum=10))
            from django.contrib.auth import get_user_model

            lead, _ = get_user_model().objects.get_or_create(username="bench-webhooks-lead", is_superuser=True)
            actor = services.Actor.for_user(lead)
            from memory.promotions.decisions import promotion_reject

            latencies = []
            for candidate in candidates:
                with transaction.atomic():
                    promotion_reject(candidate=candidate, actor=actor, reason="bench")
                    uid = WebhookEvent.objects.filter(type="review.decided").latest("id").uid
                    decided = time.perf_counter()
                # The commit ran the send (no broker: in-process after the commit).
                arrived = _Receiver.arrivals.get(uid)
                if arrived is not None:
                    latencies.append((arrived - decided) * 1000)
            latencies.sort()
            p50 = statistics.median(latencies)
            p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]
            bench.figure(f"decision to delivery, p50 of {len(latencies)}", p50, unit="ms", target=200)
            bench.figure(f"decision to delivery, p99 of {len(latencies)}", p99, unit="ms", target=1000)
    finally:
        server.shutdown()
        server.server_close()
