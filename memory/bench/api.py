"""Benchmark: the context endpoint under concurrent load, next to a trivial JSON view of the same app.

A memory of 10,000 lessons in a fresh SQLite database (or the scratch database DATABASE_URL names),
served by gunicorn with the worker count gunicorn advises for the machine (2 × cores + 1) on
loopback; a second process generates the load with 32 client threads and http.client, bounded by a
request count and a time limit. The goal: the context endpoint's median and 99th-percentile latency
within 1.2× of the trivial view's (`/api/v1/health`, the cost of a Django request on this stack),
with no error: a context hit reads the token's scope and the compiled text from the cache.

    python -m memory.bench.api [--lessons 10000] [--requests 2000] [--threads 32] [--seconds 60]

Each client thread alternates between the two endpoints, so both see the same machine load.

`run(report)` is the entry for the bench runner: `report(title, rows)` receives a list of dicts.
This module imports Django only in the subprocess that builds the database.
"""

import argparse
import http.client
import json
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from memory.bench import benchmark
from memory.bench.serving import pick_port, wait_until_serving

ROOT = Path(__file__).resolve().parents[2]
PERSONA = "Bench Lead"
PROJECT = "bench-app"
GOAL_RATIO = 1.2
THREADS = 32
ROUNDS = 5
COLUMNS = ("requests", "errors", "rps", "p50_ms", "p99_ms")


# --- the database (runs in its own process, with the bench environment) ----------------------


def seed(lessons):
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import transaction

    call_command("migrate", verbosity=0, interactive=False)
    from django.utils import timezone

    from memory import services
    from memory.models import ChangeBatch, Lesson, Memory
    from memory.refs import Ref
    from memory.tokens import agent_token_create
    from personas.models import Persona, Project

    # A scratch PostgreSQL database may hold the previous run's data.
    Persona.objects.filter(name=PERSONA).delete()
    Project.objects.filter(slug=PROJECT).delete()
    persona = Persona.objects.create(name=PERSONA, role="Tech Lead")
    project = Project.objects.create(slug=PROJECT, name="Bench app", repository_url="https://example.com/bench")
    memory = Memory.objects.create(persona=persona, project=project)
    core = min(100, lessons // 10)
    batch = services.batch_create(memory=memory, kind=ChangeBatch.Kind.IMPORT, actor=services.Actor.system("bench"))
    today = timezone.localdate()
    rows = []
    for i in range(lessons):
        tier = "core" if i < core else "working"
        category = (
            ("PATTERN", "DECISION", "ARCHITECTURE")[i % 3]
            if tier == "core"
            else ("OBSERVATION", "PATTERN", "TODO", "HYPOTHESIS")[i % 4]
        )
        text = f"Lesson {i}: handler_{i % 97}() in src/pkg{i % 50}/module_{i}.py retries {i % 7 + 1} times"
        rows.append(
            services.NewLesson(
                batch.pk,
                memory.pk,
                tier,
                category,
                text,
                today,
                i // 3,
                refs=[Ref(f"src/pkg{i % 50}/module_{i}.py", 10 + i % 40, 20 + i % 40)],
            )
        )
    # Bulk rows keep the set-up short; the benchmark measures reads, not the write path.
    with transaction.atomic():
        services.lessons_bulk_create(rows)
    Memory.objects.filter(pk=memory.pk).update(version=1)
    _, raw = agent_token_create(persona=persona, project=project, name="bench")
    print(json.dumps({"token": raw, "lessons": Lesson.objects.filter(memory=memory).count()}))


# --- the load generator (runs in its own process) ---------------------------------------------


def load(host, port, targets, token, requests, threads, seconds):
    """Hit every target in turn from each thread, so machine noise falls on all targets alike.

    `targets` is a list of (name, path, needs_token); stops after `requests` per target or
    after `seconds`, whichever comes first. Prints one JSON object with figures per target.
    """
    lock = threading.Lock()
    latencies = {name: [] for name, _, _ in targets}
    errors = {name: [] for name, _, _ in targets}
    issued = [0]
    total = requests * len(targets)
    deadline = time.monotonic() + seconds

    def worker():
        while True:
            with lock:
                if issued[0] >= total or time.monotonic() > deadline:
                    return
                name, path, needs_token = targets[issued[0] % len(targets)]
                issued[0] += 1
            headers = {"Authorization": f"Bearer {token}"} if needs_token else {}
            start = time.perf_counter()
            try:
                conn = http.client.HTTPConnection(host, port, timeout=30)
                conn.request("GET", path, headers=headers)
                response = conn.getresponse()
                response.read()
                conn.close()
                outcome = response.status
            except OSError as exc:
                outcome = str(exc)
            elapsed = time.perf_counter() - start
            with lock:
                if outcome == 200:
                    latencies[name].append(elapsed)
                else:
                    errors[name].append(str(outcome))

    started, cpu_started = time.perf_counter(), time.process_time()
    pool = [threading.Thread(target=worker) for _ in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    wall = time.perf_counter() - started
    client_cpu = time.process_time() - cpu_started
    figures = {}
    for name, _, _ in targets:
        values = sorted(latencies[name])
        figures[name] = {
            "requests": len(values),
            "errors": len(errors[name]),
            "error_sample": errors[name][:3],
            "seconds": round(wall, 2),
            # Each target got its share of the same wall time; rps is per target.
            "rps": round(len(values) / wall, 1) if wall else 0,
            "p50_ms": round(statistics.median(values) * 1000, 2) if values else None,
            "p99_ms": round(values[min(len(values) - 1, int(0.99 * len(values)))] * 1000, 2) if values else None,
            # CPU this load process spent per request (all targets together).
            "client_cpu_us": round(client_cpu / max(1, issued[0]) * 1e6, 1),
        }
    print(json.dumps(figures))


# --- orchestration ----------------------------------------------------------------------------


def _load_process(env, port, targets, token, requests, threads, seconds):
    spec = json.dumps(targets)
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "memory.bench.api",
            "--load",
            spec,
            "--port",
            str(port),
            "--token",
            token,
            "--requests",
            str(requests),
            "--threads",
            str(threads),
            "--seconds",
            str(seconds),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def server_cpu_seconds(server):
    """CPU seconds used so far by the server's worker processes (Linux /proc; None elsewhere)."""
    try:
        children = Path(f"/proc/{server.pid}/task/{server.pid}/children").read_text().split()
        ticks = 0
        for pid in children:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            ticks += int(fields[11]) + int(fields[12])  # utime, stime
        return ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def workers():
    """What gunicorn's documentation advises: (2 × cores) + 1."""
    return 2 * (os.cpu_count() or 1) + 1


def seeded_environment(tmp, lessons):
    """(env, info) of a database holding the bench memory; info has the token.

    A fresh SQLite database in `tmp`, or the scratch database DATABASE_URL names (with CACHE_URL's
    Redis when set), for the PostgreSQL figures.
    """
    env = {
        **{k: v for k, v in os.environ.items() if k != "CELERY_BROKER_URL"},
        "DJANGO_SETTINGS_MODULE": "nightwatch.settings",
        "SQLITE_PATH": str(Path(tmp) / "bench.sqlite3"),
        "DEBUG": "0",
        "SECRET_KEY": secrets.token_urlsafe(40),
        "LOG_LEVEL": "warning",
    }
    seeded = subprocess.run(
        [sys.executable, "-m", "memory.bench.api", "--seed", str(lessons)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return env, json.loads(seeded.stdout.strip().splitlines()[-1])


def measure(*, lessons=10_000, requests=2000, threads=THREADS, seconds=60.0):
    with tempfile.TemporaryDirectory(prefix="nw-bench-") as tmp:
        env, info = seeded_environment(tmp, lessons)
        token = info["token"]
        port = pick_port()
        server = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "gunicorn",
                "nightwatch.wsgi:application",
                "--workers",
                str(workers()),
                "--bind",
                f"127.0.0.1:{port}",
                "--log-level",
                "warning",
            ],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        try:
            wait_until_serving(port, server)
            context = f"/api/v1/memory/{PERSONA.replace(' ', '%20')}/{PROJECT}/context"
            # Warm both workers' caches (each process compiles the memory once per version).
            _load_process(env, port, [["context", context, True]], token, 40, 4, seconds)
            both = [["health", "/api/v1/health", False], ["context", context, True]]
            # Mixed: every client thread alternates between the endpoints (same queue, same noise).
            mixed = _load_process(env, port, both, token, requests, threads, seconds)
            # Alone: each endpoint by itself, so its own service time shows, in rounds of one run of
            # each back to back (the order alternating): a round's two runs share the machine's load,
            # and the ratio is the median of the rounds' ratios.
            rounds = {"health": [], "context": []}
            server_cpu = {"health": [], "context": []}
            for i in range(ROUNDS):
                for target in both if i % 2 == 0 else both[::-1]:
                    before = server_cpu_seconds(server)
                    figures = _load_process(env, port, [target], token, requests // ROUNDS, threads, seconds)
                    after = server_cpu_seconds(server)
                    rounds[target[0]].append(figures[target[0]])
                    if before is not None and after is not None:
                        server_cpu[target[0]].append((after - before, figures[target[0]]["requests"]))
            alone = {name: _combine(runs) for name, runs in rounds.items()}
            for name, spans in server_cpu.items():
                # Where the time goes: CPU per request in the server's workers and in the load process.
                cpu, count = sum(c for c, _ in spans), sum(n for _, n in spans)
                alone[name]["server_cpu_us"] = round(cpu / count * 1e6) if count and spans else None
                alone[name]["client_cpu_us"] = round(statistics.median(r["client_cpu_us"] for r in rounds[name]))
            for column in ("p50_ms", "p99_ms"):
                alone[column[:3] + "_ratio"] = round(
                    statistics.median(
                        c[column] / h[column] for h, c in zip(rounds["health"], rounds["context"]) if h[column]
                    ),
                    2,
                )
            results = {"mixed": mixed, "alone": alone}
        finally:
            server.terminate()
            server.wait(timeout=30)
    return info["lessons"], results


def _combine(runs):
    count = sum(r["requests"] for r in runs)
    wall = sum(r["seconds"] for r in runs)
    return {
        "requests": count,
        "errors": sum(r["errors"] for r in runs),
        "rps": round(count / wall, 1) if wall else 0,
        "p50_ms": round(statistics.median(r["p50_ms"] for r in runs), 2),
        "p99_ms": round(statistics.median(r["p99_ms"] for r in runs), 2),
    }


def _ratio(results, column="p50_ms"):
    if column[:3] + "_ratio" in results:  # measured round by round
        return results[column[:3] + "_ratio"]
    health, context = results["health"][column], results["context"][column]
    return round(context / health, 2) if health else None


@benchmark("api", "Context endpoint under load, beside a trivial JSON view")
def bench_api(bench):
    lessons, results = measure(lessons=bench.scaled(10_000), requests=bench.scaled(2000, minimum=50))
    for mode in ("alone", "mixed"):
        data = results[mode]
        bench.note(f"{mode}: {'':<9} {'p50 ms':>8} {'p99 ms':>8} {'req/s':>8} {'errors':>7}")
        for name, label in (("health", "trivial"), ("context", "context")):
            row = data[name]
            bench.note(f"{mode}: {label:<9} {row['p50_ms']:>8} {row['p99_ms']:>8} {row['rps']:>8} {row['errors']:>7}")
        for name, label in (("health", "trivial"), ("context", "context")):
            bench.figure(f"{mode}: {label} p50", data[name]["p50_ms"], unit="ms")
            bench.figure(f"{mode}: {label} p99", data[name]["p99_ms"], unit="ms")
            bench.figure(f"{mode}: {label} throughput", data[name]["rps"], unit="req/s")
        bench.figure(f"{mode}: context p50 / trivial p50", _ratio(data), unit="×", target=GOAL_RATIO)
        bench.figure(f"{mode}: context p99 / trivial p99", _ratio(data, "p99_ms"), unit="×", target=GOAL_RATIO)
        bench.figure(f"{mode}: errors", data["health"]["errors"] + data["context"]["errors"], unit="", target=0)
    alone = results["alone"]
    if alone["health"].get("server_cpu_us"):
        bench.note(
            "alone, CPU per request (server workers / load process): "
            f"trivial {alone['health']['server_cpu_us']} / {alone['health']['client_cpu_us']} µs, "
            f"context {alone['context']['server_cpu_us']} / {alone['context']['client_cpu_us']} µs "
            "(alone, p50 ≈ client threads ÷ throughput: the ratio is that of the whole cost of a request)"
        )
    bench.note(
        f"{lessons} lessons; gunicorn with {workers()} workers on loopback; {THREADS} client threads "
        "in a second process"
    )


def run(report, **options):
    lessons, results = measure(**options)
    threads = options.get("threads", THREADS)
    figures = {"lessons": lessons}
    for mode, label in (("alone", "each endpoint alone"), ("mixed", "both endpoints interleaved")):
        data = results[mode]
        ratio = _ratio(data)
        verdict = "met" if ratio is not None and ratio <= GOAL_RATIO else "NOT met"
        rows = [
            {"endpoint": "GET /api/v1/health (trivial JSON)", **{k: data["health"][k] for k in COLUMNS}},
            {"endpoint": f"GET …/context ({lessons} lessons)", **{k: data["context"][k] for k in COLUMNS}},
        ]
        report(
            f"Agent API, gunicorn {workers()} workers, {threads} client threads, {label}: context p50 = {ratio}× the "
            f"trivial view (goal ≤ {GOAL_RATIO}×: {verdict})",
            rows,
        )
        figures[mode] = {"health": data["health"], "context": data["context"], "p50_ratio": ratio}
    return figures


def print_report(title, rows):
    print()
    print(title)
    columns = list(rows[0])
    widths = [max(len(str(c)), *(len(str(r[c])) for r in rows)) for c in columns]
    print("  ".join(str(c).ljust(w) for c, w in zip(columns, widths)))
    for r in rows:
        print("  ".join(str(r[c]).ljust(w) for c, w in zip(columns, widths)))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--load", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--token", default="", help=argparse.SUPPRESS)
    parser.add_argument("--lessons", type=int, default=10_000)
    parser.add_argument("--requests", type=int, default=2000, help="per endpoint")
    parser.add_argument("--threads", type=int, default=THREADS)
    parser.add_argument("--seconds", type=float, default=60.0, help="time limit of the measured run")
    args = parser.parse_args(argv)
    if args.seed is not None:
        return seed(args.seed)
    if args.load:
        targets = [tuple(t) for t in json.loads(args.load)]
        return load("127.0.0.1", args.port, targets, args.token, args.requests, args.threads, args.seconds)
    figures = run(
        print_report, lessons=args.lessons, requests=args.requests, threads=args.threads, seconds=args.seconds
    )
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
