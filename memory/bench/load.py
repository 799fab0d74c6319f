"""Load test: many agents appending to one memory at once, through gunicorn (2 workers × 4 threads).

20 client threads each append 50 lessons (one per request) to the same memory. Every request must
succeed: 0 errors, every lesson stored exactly once, and the memory's version equal to the number
of successful appends (each append bumps it once). Runs on a scratch SQLite file, and also on
PostgreSQL when DATABASE_URL points at one (a scratch database: the run's persona stays there).

    python -m memory.bench.load [--agents 20] [--appends 50]
"""

import argparse
import http.client
import json
import os
import secrets
import sys
import tempfile
import threading
import time
from urllib.parse import quote

from memory.bench import benchmark
from memory.bench.serving import gunicorn, seed_memory, server_env

AGENTS = 20
APPENDS = 50
DEADLINE_SECONDS = 600


def _request(port, method, path, token, body=None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        headers = {"Authorization": f"Bearer {token}"}
        if body is not None:
            headers["Content-Type"] = "application/json"
        conn.request(method, path, body=json.dumps(body) if body is not None else None, headers=headers)
        response = conn.getresponse()
        return response.status, response.read(), dict(response.getheaders())
    finally:
        conn.close()


def hammer(port, token, base, agents, appends):
    """Every agent thread appends its lessons; returns (successes, errors, sample errors, seconds)."""
    lock = threading.Lock()
    successes, errors = [0], []
    deadline = time.monotonic() + DEADLINE_SECONDS

    def agent(n):
        for i in range(appends):
            if time.monotonic() > deadline:
                with lock:
                    errors.append("deadline passed")
                return
            body = {"lessons": [{"tool": "log_learning", "text": f"Agent {n} learned fact number {i} under load"}]}
            try:
                status, data, _ = _request(port, "POST", f"{base}/lessons", token, body)
                outcome = None if status == 201 else f"{status} {data[:200]!r}"
            except OSError as exc:
                outcome = f"connection error: {exc}"
            with lock:
                if outcome is None:
                    successes[0] += 1
                else:
                    errors.append(outcome)

    started = time.perf_counter()
    pool = [threading.Thread(target=agent, args=(n,)) for n in range(agents)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    return successes[0], errors, time.perf_counter() - started


def measure(database_url="", *, agents=AGENTS, appends=APPENDS):
    """Figures of one run: requests, successes, errors, stored, version, seconds."""
    with tempfile.TemporaryDirectory(prefix="nw-load-") as tmp:
        env = server_env(tmp, database_url)
        tag = secrets.token_hex(4)
        persona, project = f"Load {tag}", f"load-{tag}"
        seeded = seed_memory(env, persona, project)
        token = seeded["token"]
        base = f"/api/v1/memory/{quote(persona)}/{project}"
        with gunicorn(env, workers=2, threads=4) as port:
            successes, errors, seconds = hammer(port, token, base, agents, appends)
            _, listing, _ = _request(port, "GET", f"{base}/lessons?limit=1", token)
            _, _, headers = _request(port, "GET", f"{base}/context", token)
    return {
        "requests": agents * appends,
        "successes": successes,
        "errors": len(errors),
        "error_sample": errors[:3],
        "stored": json.loads(listing)["count"],
        "version": int(headers.get("X-Memory-Version", -1)),
        "seconds": round(seconds, 2),
    }


def databases():
    """(label, DATABASE_URL) pairs: SQLite always, PostgreSQL when DATABASE_URL names one."""
    found = [("SQLite", "")]
    url = os.environ.get("DATABASE_URL", "")
    if url.startswith(("postgres://", "postgresql://")):
        found.append(("PostgreSQL", url))
    return found


@benchmark("load", "20 agents × 50 appends to one memory at once (gunicorn 2 workers × 4 threads)")
def bench_load(bench):
    agents, appends = AGENTS, bench.scaled(APPENDS, minimum=5)
    for label, url in databases():
        figures = measure(url, agents=agents, appends=appends)
        bench.figure(f"{label}: failed appends of {figures['requests']}", figures["errors"], unit="", target=0)
        bench.figure(
            f"{label}: lessons stored − successful appends",
            abs(figures["stored"] - figures["successes"]),
            unit="",
            target=0,
        )
        bench.figure(
            f"{label}: memory version − successful appends",
            abs(figures["version"] - figures["successes"]),
            unit="",
            target=0,
        )
        bench.figure(f"{label}: appends per second", figures["successes"] / figures["seconds"], unit="req/s")
        bench.note(
            f"{label}: {figures['successes']} of {figures['requests']} appends succeeded, "
            f"{figures['stored']} lessons stored, version {figures['version']}, {figures['seconds']} s"
            + (f"; errors e.g. {figures['error_sample']}" if figures["errors"] else "")
        )
    if len(databases()) == 1:
        bench.note("PostgreSQL not measured: set DATABASE_URL=postgres://… (a scratch database) to add it")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--agents", type=int, default=AGENTS)
    parser.add_argument("--appends", type=int, default=APPENDS)
    args = parser.parse_args(argv)
    ok = True
    for label, url in databases():
        figures = measure(url, agents=args.agents, appends=args.appends)
        print(f"{label}: {json.dumps(figures)}")
        ok &= figures["errors"] == 0 and figures["stored"] == figures["successes"] == figures["version"]
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
