"""Benchmark: get_memory over MCP (streamable HTTP) beside the context endpoint, in one deployment.

The memory of the API benchmark (10,000 lessons, SQLite) is served by `nightwatch.asgi` under
uvicorn (2 workers): Django and /mcp/ in the same processes. A second process holds one MCP
session (the SDK's client) and one HTTP client and, round after round, times the three reads an
agent can make of the same memory: the context as text, the context as JSON with lesson ids
(what get_memory returns), and the get_memory tool. One client, one request at a time: this is
the latency an agent waits, not throughput. Bounded by a round count and a time limit.

    python -m memory.bench.mcp [--lessons 10000] [--rounds 300] [--seconds 30]
"""

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time

from memory.bench import benchmark
from memory.bench.api import PERSONA, PROJECT, ROOT, seeded_environment
from memory.bench.serving import pick_port, wait_until_serving

TARGETS = ("context", "context_json", "mcp_get_memory")
LABELS = {
    "context": "GET …/context (text)",
    "context_json": "GET …/context?format=json",
    "mcp_get_memory": "MCP tools/call get_memory",
}
# get_memory does what ?format=json does, plus JSON-RPC framing and the SDK on both ends.
GOAL_RATIO = 3.0


# --- the client (its own process) ----------------------------------------------------------------


def load(port, token, rounds, seconds):
    import anyio

    anyio.run(_load, port, token, rounds, seconds)


async def _load(port, token, rounds, seconds):
    from urllib.parse import quote

    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    base = f"http://127.0.0.1:{port}"
    context = f"{base}/api/v1/memory/{quote(PERSONA)}/{PROJECT}/context"
    latencies = {name: [] for name in TARGETS}
    errors = dict.fromkeys(TARGETS, 0)
    async with (
        create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as http,
        Client(streamable_http_client(f"{base}/mcp/", http_client=http)) as client,
    ):

        async def read_text():
            return (await http.get(context)).status_code == 200

        async def read_json():
            return (await http.get(context, params={"format": "json"})).status_code == 200

        async def get_memory():
            return not (await client.call_tool("get_memory", {})).is_error

        calls = {"context": read_text, "context_json": read_json, "mcp_get_memory": get_memory}
        for _ in range(4):  # warm both workers' caches and connections
            for call in calls.values():
                await call()
        deadline = time.monotonic() + seconds
        done = 0
        while done < rounds and time.monotonic() < deadline:
            for name, call in calls.items():
                start = time.perf_counter()
                ok = await call()
                elapsed = time.perf_counter() - start
                if ok:
                    latencies[name].append(elapsed)
                else:
                    errors[name] += 1
            done += 1
    figures = {}
    for name in TARGETS:
        values = sorted(latencies[name])
        figures[name] = {
            "requests": len(values),
            "errors": errors[name],
            "p50_ms": round(statistics.median(values) * 1000, 2) if values else None,
            "p99_ms": round(values[min(len(values) - 1, int(0.99 * len(values)))] * 1000, 2) if values else None,
        }
    print(json.dumps(figures))


# --- orchestration -------------------------------------------------------------------------------


def measure(*, lessons=10_000, rounds=300, seconds=30.0):
    with tempfile.TemporaryDirectory(prefix="nw-bench-mcp-") as tmp:
        env, info = seeded_environment(tmp, lessons)
        port = pick_port()
        server = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "uvicorn",
                "nightwatch.asgi:application",
                "--workers",
                "2",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
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
            out = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "memory.bench.mcp",
                    "--load",
                    "--port",
                    str(port),
                    "--token",
                    info["token"],
                    "--rounds",
                    str(rounds),
                    "--seconds",
                    str(seconds),
                ],
                cwd=ROOT,
                env=env,
                capture_output=True,
                text=True,
                check=True,
                timeout=seconds + 120,
            )
        finally:
            server.terminate()
            server.wait(timeout=30)
    return info["lessons"], json.loads(out.stdout.strip().splitlines()[-1])


def _ratio(results, name, base="context_json"):
    value, reference = results[name]["p50_ms"], results[base]["p50_ms"]
    return round(value / reference, 2) if value and reference else None


@benchmark("mcp", "get_memory over MCP streamable HTTP, beside the context endpoint")
def bench_mcp(bench):
    lessons, results = measure(lessons=bench.scaled(10_000), rounds=bench.scaled(300, minimum=20))
    for name in TARGETS:
        bench.figure(f"{LABELS[name]} p50", results[name]["p50_ms"], unit="ms")
        bench.figure(f"{LABELS[name]} p99", results[name]["p99_ms"], unit="ms")
    bench.figure(
        "get_memory p50 / context?format=json p50", _ratio(results, "mcp_get_memory"), unit="×", target=GOAL_RATIO
    )
    bench.figure("get_memory p50 / context (text) p50", _ratio(results, "mcp_get_memory", "context"), unit="×")
    failed = sum(results[name]["errors"] for name in TARGETS)
    bench.note(
        f"{lessons} lessons; uvicorn with 2 workers serving Django and /mcp/; one client in a second "
        f"process, {results['mcp_get_memory']['requests']} rounds of the three reads; {failed} failed"
    )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--load", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--token", default="", help=argparse.SUPPRESS)
    parser.add_argument("--lessons", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--seconds", type=float, default=30.0, help="time limit of the measured rounds")
    args = parser.parse_args(argv)
    if args.load:
        return load(args.port, args.token, args.rounds, args.seconds)
    lessons, results = measure(lessons=args.lessons, rounds=args.rounds, seconds=args.seconds)
    print(
        json.dumps(
            {"lessons": lessons, **results, "get_memory_vs_context_json": _ratio(results, "mcp_get_memory")}, indent=1
        )
    )


if __name__ == "__main__":
    main()
