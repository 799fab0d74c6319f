"""Fuzz the agent API against its own OpenAPI schema with schemathesis, on a live server.

A scratch SQLite database gets a persona, a project and an agent token; gunicorn serves the app
on a free loopback port; schemathesis sends generated requests (valid and invalid ones) with the
token and checks every answer: no server error, status codes, content types, headers and bodies
as documented, valid input accepted and invalid input refused. Bounded by --seconds.

    python -m memory.api.fuzz [--seconds 120] [--seed 13] [--max-examples 50]

Exits non-zero when schemathesis found a problem; its report says which request and why.
"""

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path

from memory.bench.serving import ROOT, gunicorn, seed_memory, server_env

PERSONA = "Fuzz"
PROJECT = "fuzz-app"
# Lessons in the memory from the start, so a generated `words=` search reaches the index with rows to
# match and rank (and their text to mark), not only an empty table.
SEED_LESSONS = [
    {"category": "OBSERVATION", "text": "Retrying the Stripe webhook after 30 s avoids the duplicate refund"},
    {"category": "PATTERN", "text": "Pin pydantic<2 in src/billing/requirements.txt until the models move"},
    {"category": "DECISION", "text": "Die Datenbankverbindungen werden nach jeder Abfrage geschlossen"},
    {"category": "OBSERVATION", "text": 'La consulta de pagos falla con "npm ci" y #L20 en utf-8'},
]


def _seed_lessons(base, token):
    request = urllib.request.Request(
        f"{base}/memory/{PERSONA}/{PROJECT}/lessons",
        data=json.dumps({"lessons": SEED_LESSONS}).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        assert response.status == 201, response.status


def _schemathesis():
    found = Path(sys.executable).with_name("schemathesis")
    return str(found) if found.exists() else shutil.which("schemathesis")


# The coverage phase sends each parameter's boundary and out-of-schema values (a limit of 0, a
# string where an integer goes, a missing required field) that random generation rarely hits:
# it is what finds a request the schema forbids but the API accepts.
PHASES = "examples,coverage,fuzzing"


def run(*, seconds, seed, max_examples, workers=1, fixed_names=True, phases=PHASES):
    tool = _schemathesis()
    if not tool:
        raise SystemExit("schemathesis is not installed: pip install -e '.[test]'")
    with tempfile.TemporaryDirectory(prefix="nw-fuzz-") as tmp:
        env = server_env(tmp)
        token = seed_memory(env, PERSONA, PROJECT)["token"]
        # The seeded persona and project in every URL, so generated bodies reach the writes
        # (--random-names fuzzes the names in the URL instead).
        config = Path(tmp) / "schemathesis.toml"
        # A request the web server refuses as too long (414) or too large (413) is refused too.
        rejected = '["400", "401", "403", "404", "405", "406", "409", "413", "414", "415", "422", "428", "429"]'
        config.write_text(
            (f'[parameters]\n"path.persona" = "{PERSONA}"\n"path.project" = "{PROJECT}"\n' if fixed_names else "")
            + f"[checks.negative_data_rejection]\nexpected-statuses = {rejected}\n"
        )
        with gunicorn(env, workers=2, threads=4) as port:
            base = f"http://127.0.0.1:{port}/api/v1"
            _seed_lessons(base, token)
            command = [
                tool,
                "--config-file",
                str(config),
                "run",
                f"{base}/openapi.json",
                "--header",
                f"Authorization: Bearer {token}",
                "--phases",
                phases,
                "--checks",
                "all",
                "--exclude-checks",
                "ignored_auth",
                "--max-time",
                str(seconds),
                "--seed",
                str(seed),
                "--max-examples",
                str(max_examples),
                "--workers",
                str(workers),
                "--request-timeout",
                "30",
                "--no-color",
            ]
            print(f"fuzz: {len(command)}-argument schemathesis run against {base}, {seconds}s budget, seed {seed}")
            return subprocess.run(command, cwd=ROOT, env=env, timeout=seconds * 3 + 300).returncode


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=int, default=120, help="time budget of the schemathesis run")
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--max-examples", type=int, default=50, help="generated cases per operation and phase")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--phases", default=PHASES, help=f"schemathesis phases to run (default {PHASES})")
    parser.add_argument(
        "--random-names",
        action="store_true",
        help="fuzz the persona and project in the URL too (most requests then end in 403/404)",
    )
    args = parser.parse_args(argv)
    return run(
        seconds=args.seconds,
        seed=args.seed,
        max_examples=args.max_examples,
        workers=args.workers,
        fixed_names=not args.random_names,
        phases=args.phases,
    )


if __name__ == "__main__":
    sys.exit(main())
