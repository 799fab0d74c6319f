"""A live copy of the app for load and fuzz runs: a scratch database, a seeded agent token, gunicorn.

Imports Django only in the seeding subprocess, so callers can run before settings are loaded.
"""

import contextlib
import http.client
import json
import os
import random
import secrets
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def pick_port():
    """A free loopback port in 20000–29999 (the range this project's local servers use)."""
    for _ in range(200):
        port = random.randint(20000, 29999)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free port in 20000–29999")


def server_env(tmp, database_url=""):
    """Production-like settings on a scratch SQLite file in tmp, or on database_url when given."""
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "CACHE_URL", "CELERY_BROKER_URL")}
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "nightwatch.settings",
            "SQLITE_PATH": str(Path(tmp) / "live.sqlite3"),
            "DEBUG": "0",
            "SECRET_KEY": secrets.token_urlsafe(50),
            "ALLOWED_HOSTS": "127.0.0.1",
            "LOG_LEVEL": "warning",
        }
    )
    if database_url:
        env["DATABASE_URL"] = database_url
    return env


def seed_memory(env, persona, project):
    """Migrate, create persona, project and an empty memory, and return {token, memory_id} (subprocess)."""
    out = subprocess.run(
        [sys.executable, "-m", "memory.bench.serving", "--seed", persona, project],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if out.returncode != 0:
        raise RuntimeError(f"seeding failed: {out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _seed(persona_name, project_slug):
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0, interactive=False)
    from memory.models import Memory
    from memory.tokens import agent_token_create
    from personas.models import Persona, Project

    persona = Persona.objects.create(name=persona_name, role="Developer")
    project = Project.objects.create(slug=project_slug, name=project_slug)
    memory = Memory.objects.create(persona=persona, project=project)
    _, raw = agent_token_create(persona=persona, project=project, name="live run")
    print(json.dumps({"token": raw, "memory_id": memory.pk}))


def wait_until_serving(port, proc, timeout=90):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"gunicorn exited before serving: {proc.stderr.read().decode()[-2000:]}")
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", "/api/v1/health")
            if conn.getresponse().status == 200:
                return
        except OSError:
            threading.Event().wait(0.2)
    raise RuntimeError(f"gunicorn did not answer on port {port} within {timeout}s")


@contextlib.contextmanager
def gunicorn(env, *, workers=2, threads=4):
    """Serve the app on a free port; yields the port and stops the server afterwards."""
    port = pick_port()
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "nightwatch.wsgi:application",
            "--workers",
            str(workers),
            "--threads",
            str(threads),
            "--worker-class",
            "gthread",
            "--bind",
            f"127.0.0.1:{port}",
            "--log-level",
            "warning",
            "--timeout",
            "120",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        wait_until_serving(port, server)
        yield port
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


if __name__ == "__main__":
    if sys.argv[1:2] == ["--seed"]:
        _seed(sys.argv[2], sys.argv[3])
