"""An interaction posted to the API is reflected by a real Celery worker; the lesson shows in the context."""

import json
import os
import subprocess
import sys
import urllib.request
import uuid
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import kombu.pools
import pytest
from django.db import connection

from memory.tokens import agent_token_create
from nightwatch.celery import app as celery_app
from tests.e2e.conftest import wait_for
from tests.factories import MemoryFactory, PersonaFactory, ProjectFactory

ROOT = Path(__file__).resolve().parents[2]
WORKER_TIMEOUT = 90


def _test_database_url():
    """DATABASE_URL with the test database's name, so the worker writes where the test reads."""
    parts = urlsplit(os.environ["DATABASE_URL"])
    return urlunsplit(parts._replace(path="/" + connection.settings_dict["NAME"]))


@pytest.fixture
def worker_queue(e2e_broker_url):
    """Route this test's tasks to a queue of its own on the real broker, for the duration of the test."""
    queue = f"nw-e2e-{uuid.uuid4().hex[:8]}"
    saved = {k: celery_app.conf[k] for k in ("broker_url", "task_always_eager", "task_default_queue")}
    celery_app.conf.update(broker_url=e2e_broker_url, task_always_eager=False, task_default_queue=queue)
    _reset_connections()
    yield queue
    celery_app.conf.update(**saved)
    _reset_connections()


def _reset_connections():
    """Drop pooled broker connections so the next publish uses the broker configured now."""
    if celery_app._pool is not None:
        celery_app._pool.force_close_all()
        celery_app._pool = None
    celery_app.amqp._producer_pool = None
    # kombu keeps a producer pool per connection in a global registry; one built on the closed pool
    # would be handed back to later publishes (in-process tasks included) and fail on acquire.
    kombu.pools.reset()


@pytest.fixture
def celery_worker_process(transactional_db, e2e_broker_url, worker_queue, tmp_path):
    log_path = tmp_path / "worker.log"
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "nightwatch.settings",
        "DATABASE_URL": _test_database_url(),
        "CELERY_BROKER_URL": e2e_broker_url,
        "CELERY_TASK_ALWAYS_EAGER": "0",
        "DB_CONN_MAX_AGE": "0",
    }
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "nightwatch",
                "worker",
                "--pool=solo",
                "--loglevel=info",
                "-Q",
                worker_queue,
                "-n",
                f"{worker_queue}@%h",
                "--without-heartbeat",
                "--without-gossip",
                "--without-mingle",
            ],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    proc.log_path = log_path
    try:
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _http(method, url, token, body=None):
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(
        url,
        data=data,
        method=method,
        headers={
            "Authorization": f"Bearer {token}",
            "Content-Type": "application/json",
        },
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.status, response.read().decode()


def test_posted_interaction_is_reflected_by_the_worker(live_server, celery_worker_process):
    persona = PersonaFactory(name="Priya", role="QA Engineer")
    project = ProjectFactory(slug="night-watch")
    MemoryFactory(persona=persona, project=project)
    _, raw = agent_token_create(persona=persona, name="e2e")
    base = f"{live_server.url}/api/v1/memory/Priya/night-watch"

    status, body = _http(
        "POST",
        base + "/interactions",
        raw,
        {
            "trigger_type": "qa_run",
            "outcome": "two flaky tests",
            "summary": "test_sync.py fails one run in ten because the fixture reuses a port",
            "files_changed": ["tests/test_sync.py#L12-L30"],
        },
    )
    assert status == 202
    interaction_id = json.loads(body)["id"]
    assert json.loads(body)["status"] == "pending"  # queued for the worker, not run in this process

    def worker_alive():
        if celery_worker_process.poll() is not None:
            pytest.fail("the worker exited:\n" + celery_worker_process.log_path.read_text()[-3000:])

    def reflected():
        _, text = _http("GET", f"{live_server.url}/api/v1/interactions/{interaction_id}", raw)
        data = json.loads(text)
        return data if data["status"] != "pending" else None

    result = wait_for(
        reflected, timeout=WORKER_TIMEOUT, interval=0.2, message="the worker's reflection", on_tick=worker_alive
    )
    assert result["status"] == "reflected", result
    assert len(result["lesson_ids"]) == 1

    status, context = _http("GET", base + "/context", raw)
    assert status == 200
    assert (
        "- [OBSERVATION] test_sync.py fails one run in ten because the fixture reuses a port "
        "(ref: tests/test_sync.py#L12-L30)"
    ) in context
    assert "reflect_interaction" in celery_worker_process.log_path.read_text()
