"""An interaction posted to the API is reflected by a real Celery worker; the lesson shows in the context."""

import json
import urllib.request

import pytest

from memory.tokens import agent_token_create
from tests.e2e.conftest import wait_for
from tests.factories import MemoryFactory, PersonaFactory, ProjectFactory

WORKER_TIMEOUT = 90


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
