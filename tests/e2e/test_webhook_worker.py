"""A real Celery worker killed in the middle of a delivery loses nothing: another worker sends it."""

import signal
import threading

import pytest
from standardwebhooks.webhooks import Webhook
from werkzeug import Response

from memory import services
from memory.models import WebhookDelivery
from memory.promotions.services import promotion_reject
from memory.webhooks.services import webhook_endpoint_create
from nightwatch.celery import app as celery_app
from tests.e2e.conftest import start_worker, stop_worker, wait_for
from tests.webhooks.test_delivery import _candidate

LEASE_SECONDS = 3


@pytest.fixture
def slow_receiver(httpserver):
    """Holds its first request until released (the worker is killed meanwhile), then answers 200."""
    state = {"first_arrived": threading.Event(), "release": threading.Event(), "verified": [], "secret": None}

    def handle(request):
        if not state["first_arrived"].is_set():
            state["first_arrived"].set()
            state["release"].wait(30)
            return Response("too late", status=200)
        payload = Webhook(state["secret"]).verify(request.get_data(as_text=True), dict(request.headers))
        state["verified"].append((request.headers["webhook-id"], payload))
        return Response("ok", status=200)

    httpserver.expect_request("/hook", method="POST").respond_with_handler(handle)
    yield state
    state["release"].set()


def test_a_worker_killed_mid_delivery_loses_nothing(
    transactional_db, e2e_broker_url, worker_queue, tmp_path, httpserver, slow_receiver, team_memory, approver, settings
):
    settings.WEBHOOKS_ALLOW_PRIVATE = True
    memory = team_memory("payments")
    endpoint = webhook_endpoint_create(
        team=memory.project.team, url=httpserver.url_for("/hook"), event_types=["review.decided"]
    )
    slow_receiver["secret"] = endpoint.secret
    env = {"WEBHOOKS_ALLOW_PRIVATE": "1", "WEBHOOKS_LEASE_SECONDS": str(LEASE_SECONDS)}
    first = start_worker(e2e_broker_url, worker_queue, tmp_path / "first.log", **env)
    try:
        candidate = _candidate(memory)
        # Commits, then queues memory.webhooks.dispatch on the real broker for the worker.
        promotion_reject(candidate=candidate, actor=services.Actor.for_user(approver), reason="Not a lesson")
        if not slow_receiver["first_arrived"].wait(90):
            pytest.fail("the worker never sent the event:\n" + first.log_path.read_text()[-3000:])
        first.send_signal(signal.SIGKILL)  # dies while the receiver holds the request
        first.wait(20)
        slow_receiver["release"].set()
    finally:
        stop_worker(first)
    delivery = WebhookDelivery.objects.get()
    assert delivery.status == "pending" and delivery.attempts == 0 and delivery.leased_until is not None
    event_id = delivery.event.uid

    second = start_worker(e2e_broker_url, worker_queue, tmp_path / "second.log", **env)
    try:

        def delivered():
            celery_app.send_task("memory.webhooks.dispatch", queue=worker_queue)  # what beat does
            return WebhookDelivery.objects.filter(pk=delivery.pk, status="delivered").exists()

        wait_for(delivered, timeout=90, interval=LEASE_SECONDS, message="the second worker's delivery")
    finally:
        stop_worker(second)
    assert [event_id for event_id, _ in slow_receiver["verified"]][:1] == [event_id]
    assert {eid for eid, _ in slow_receiver["verified"]} == {event_id}
    delivery.refresh_from_db()
    assert delivery.attempts == 1 and delivery.last_status_code == 200
