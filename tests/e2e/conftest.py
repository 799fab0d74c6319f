"""End-to-end tests: real worker processes against the machine's Redis and PostgreSQL.

They run when NW_E2E_BROKER_URL names a Redis broker and DATABASE_URL a PostgreSQL server.
Without them the tests are skipped with the reason; with NW_REQUIRE_SERVICES=1 (the CI run on
real services) a missing or unreachable service is a failure instead.
"""

import os
import threading
import time

import pytest

from tests.conftest import requires_services


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
