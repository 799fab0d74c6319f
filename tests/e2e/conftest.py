"""End-to-end tests: real worker processes against the machine's Redis and PostgreSQL.

They run when NW_E2E_BROKER_URL names a Redis broker and DATABASE_URL a PostgreSQL server.
Without them the tests are skipped with the reason; with NW_REQUIRE_SERVICES=1 (the CI run on
real services) a missing or unreachable service is a failure instead.
"""

import os
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import kombu.pools
import pytest
from django.db import connection

from nightwatch.celery import app as celery_app
from tests.conftest import requires_services

ROOT = Path(__file__).resolve().parents[2]


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "tests/e2e/" in str(item.fspath):
            item.add_marker(pytest.mark.e2e)


def _unavailable(reason):
    if requires_services():
        pytest.fail(f"NW_REQUIRE_SERVICES=1 but {reason}")
    pytest.skip(reason)


@pytest.fixture
def e2e_broker_url(settings):
    url = os.environ.get("NW_E2E_BROKER_URL", "")
    if not url:
        _unavailable("NW_E2E_BROKER_URL is not set (e.g. redis://127.0.0.1:6379/6); no broker for a real worker")
    if not settings.DATABASES["default"]["ENGINE"].endswith("postgresql"):
        _unavailable("DATABASE_URL must point at PostgreSQL so a worker process can see the test database")
    import redis

    try:
        redis.Redis.from_url(url, socket_connect_timeout=3).ping()
    except Exception as exc:  # any failure to reach the broker means the same thing here
        _unavailable(f"the broker at {url} does not answer: {exc}")
    return url


def wait_for(predicate, *, timeout, interval=0.1, message="condition", on_tick=None):
    """Poll `predicate` until it returns something truthy or the deadline passes."""
    deadline = time.monotonic() + timeout
    pause = threading.Event()
    while True:
        if on_tick:
            on_tick()
        result = predicate()
        if result:
            return result
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout}s waiting for {message}")
        pause.wait(interval)


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


def start_worker(broker_url, queue, log_path, **env_overrides):
    """A real Celery worker process on `queue`, writing to the test database; its log at log_path."""
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "nightwatch.settings",
        "DATABASE_URL": _test_database_url(),
        "CELERY_BROKER_URL": broker_url,
        "CELERY_TASK_ALWAYS_EAGER": "0",
        "DB_CONN_MAX_AGE": "0",
        **env_overrides,
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
                queue,
                "-n",
                f"{queue}-{uuid.uuid4().hex[:4]}@%h",
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
    return proc


def stop_worker(proc):
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@pytest.fixture
def celery_worker_process(transactional_db, e2e_broker_url, worker_queue, tmp_path):
    proc = start_worker(e2e_broker_url, worker_queue, tmp_path / "worker.log")
    try:
        yield proc
    finally:
        stop_worker(proc)
