"""Events reach a real receiver signed, at least once, never again after a 2xx, whatever fails."""

import socket
from datetime import timedelta

import pytest
import time_machine
from django.utils import timezone

from memory import services
from memory.models import WebhookDelivery, WebhookEvent
from memory.promotions.services import promotion_approve, promotion_bulk_decide, promotion_reject
from memory.webhooks.services import RETRY_SCHEDULE, webhook_endpoint_create, webhook_endpoint_rotate_secret
from tests.factories import make_lesson
from tests.promotions.conftest import THEME, pending_candidates

pytestmark = pytest.mark.django_db


def _endpoint(receiver, team, path="/hook", events=("review.waiting", "review.decided"), **kwargs):
    endpoint = webhook_endpoint_create(team=team, url=receiver.url(path), event_types=list(events), **kwargs)
    receiver.listen(path, endpoint.secret)
    return endpoint


def _team_candidates(n, team):
    """n pending candidates, each in a memory of its own, all in `team`."""
    from personas.models import Project

    candidates = pending_candidates(n)
    Project.objects.filter(memories__in=[c.memory_id for c in candidates]).update(team=team)
    return candidates


def _candidate(memory):
    from datetime import date

    from memory.promotions.services import promotion_detect

    for i, (text, ref) in enumerate(THEME):
        make_lesson(memory, text, refs=ref, day=date(2026, 1, 1 + i))
    (candidate,) = promotion_detect(memory=memory).created
    return candidate


def test_a_new_candidate_and_its_approval_arrive_signed_with_links_and_no_lesson_text(
    receiver, team_memory, approver, deliver, settings
):
    settings.SITE_URL = "https://memory.example.com"
    memory = team_memory("payments")
    _endpoint(receiver, memory.project.team)
    candidate = _candidate(memory)
    promotion_approve(candidate=candidate, actor=services.Actor.for_user(approver))
    deliver()

    assert receiver.types() == ["review.waiting", "review.decided"]
    waiting, decided = (body for _, body, _ in receiver.received)
    assert waiting["data"]["items"] == [
        {"kind": "promotion", "id": candidate.pk, "url": f"https://memory.example.com/promotions/{candidate.pk}/"}
    ]
    assert waiting["data"]["team"]["slug"] == "payments"
    assert waiting["data"]["memory"]["url"].startswith("https://memory.example.com/memories/")
    assert decided["data"]["decision"] == "approved" and decided["data"]["by"] == approver.username
    assert candidate.text not in str(receiver.received)  # lesson text only where an endpoint asks for it
    for _, body, headers in receiver.received:
        assert headers["Webhook-Id"] == body["id"] and body["id"].startswith("evt_")


def test_lesson_text_is_sent_only_to_endpoints_that_ask_for_it(receiver, team_memory, deliver):
    memory = team_memory("payments")
    _endpoint(receiver, memory.project.team, "/plain", events=["review.waiting"])
    _endpoint(receiver, memory.project.team, "/with-text", events=["review.waiting"], include_lesson_text=True)
    candidate = _candidate(memory)
    deliver()
    plain = next(body for path, body, _ in receiver.received if path == "/plain")
    with_text = next(body for path, body, _ in receiver.received if path == "/with-text")
    assert "text" not in plain["data"]["items"][0]
    assert with_text["data"]["items"][0]["text"] == candidate.text


def test_failures_are_retried_with_the_same_id_until_a_2xx_and_never_after(receiver, team_memory, approver, deliver):
    memory = team_memory("payments")
    _endpoint(receiver, memory.project.team, events=["review.decided"])
    candidate = _candidate(memory)
    receiver.failures = [500, 503, 502]
    start = timezone.now()
    promotion_reject(candidate=candidate, actor=services.Actor.for_user(approver), reason="Not a lesson")
    deliver()
    delivery = WebhookDelivery.objects.get()
    assert (delivery.status, delivery.attempts, delivery.last_status_code) == ("pending", 1, 500)
    for step in range(1, 4):
        with time_machine.travel(start + sum(RETRY_SCHEDULE[:step], timedelta()) + timedelta(seconds=1), tick=False):
            deliver()
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts) == ("delivered", 4)
    assert len(receiver.ids()) == 1  # the three failures were answered before verification
    with time_machine.travel(start + timedelta(days=2), tick=False):
        deliver(3)
    assert len(receiver.ids()) == 1  # delivered: never sent again


def test_nothing_is_sent_before_its_retry_time(receiver, team_memory, approver, deliver):
    memory = team_memory("payments")
    _endpoint(receiver, memory.project.team, events=["review.decided"])
    candidate = _candidate(memory)
    receiver.failures = [500]
    promotion_reject(candidate=candidate, actor=services.Actor.for_user(approver), reason="Not a lesson")
    deliver(3)
    assert WebhookDelivery.objects.get().attempts == 1


def test_a_receiver_that_is_down_for_a_while_gets_every_event_once_it_is_back(
    receiver, team_memory, approver, deliver, settings
):
    settings.WEBHOOKS_PAUSE_AFTER = 1000
    memory = team_memory("payments")
    endpoint = _endpoint(receiver, memory.project.team, events=["review.decided"])
    real_url = endpoint.url
    with socket.socket() as closed:  # a port nobody listens on: connection refused
        closed.bind(("127.0.0.1", 0))
        dead_port = closed.getsockname()[1]
    endpoint.url = f"http://127.0.0.1:{dead_port}/hook"
    endpoint.save()
    start = timezone.now()
    candidates = _team_candidates(4, memory.project.team)
    for candidate in candidates:
        promotion_reject(candidate=candidate, actor=services.Actor.for_user(approver), reason="Not a lesson")
    deliver()
    assert set(WebhookDelivery.objects.values_list("attempts", "status")) == {(1, "pending")}
    assert "Connection" in WebhookDelivery.objects.first().last_error
    endpoint.url = real_url  # the receiver is back
    endpoint.save()
    with time_machine.travel(start + timedelta(hours=1), tick=False):
        deliver()
    decided = WebhookEvent.objects.filter(type="review.decided").values_list("uid", flat=True)
    assert sorted(receiver.ids()) == sorted(decided)
    assert len(receiver.ids()) == 4


def test_a_receiver_that_never_answers_times_out_and_is_tried_again(receiver, team_memory, approver, deliver, settings):
    settings.WEBHOOKS_TIMEOUT_SECONDS = 0.5
    memory = team_memory("payments")
    endpoint = _endpoint(receiver, memory.project.team, events=["review.decided"])
    with socket.socket() as silent:  # accepts connections, never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(5)
        endpoint.url = f"http://127.0.0.1:{silent.getsockname()[1]}/hook"
        endpoint.save()
        candidate = _candidate(memory)
        promotion_reject(candidate=candidate, actor=services.Actor.for_user(approver), reason="Not a lesson")
        deliver()
    delivery = WebhookDelivery.objects.get()
    assert delivery.status == "pending" and "no answer within" in delivery.last_error
    assert delivery.next_attempt_at > timezone.now()


def test_a_delivery_is_given_up_after_a_day_and_can_be_sent_again_with_the_same_id(
    receiver, team_memory, approver, deliver, settings
):
    from memory.webhooks.services import webhook_redeliver

    settings.WEBHOOKS_PAUSE_AFTER = 1000
    memory = team_memory("payments")
    _endpoint(receiver, memory.project.team, events=["review.decided"])
    candidate = _candidate(memory)
    receiver.failures = [500] * 20
    start = timezone.now()
    promotion_reject(candidate=candidate, actor=services.Actor.for_user(approver), reason="Not a lesson")
    for hours in range(30):
        with time_machine.travel(start + timedelta(hours=hours, seconds=1), tick=False):
            deliver()
    delivery = WebhookDelivery.objects.get()
    assert delivery.status == "failed" and delivery.attempts == len(RETRY_SCHEDULE) + 1
    receiver.failures = []
    webhook_redeliver(delivery=delivery)
    deliver()
    assert receiver.ids() == [delivery.event.uid]


def test_an_endpoint_that_keeps_failing_is_paused_and_resumes_with_what_waited(
    receiver, team_memory, approver, deliver, settings
):
    from memory.webhooks.services import webhook_endpoint_resume

    settings.WEBHOOKS_PAUSE_AFTER = 3
    memory = team_memory("payments")
    endpoint = _endpoint(receiver, memory.project.team, events=["review.decided"])
    receiver.failures = [500, 500, 500]
    for candidate in _team_candidates(3, memory.project.team):
        promotion_reject(candidate=candidate, actor=services.Actor.for_user(approver), reason="Not a lesson")
    deliver()
    endpoint.refresh_from_db()
    assert endpoint.paused_at is not None and "3 failed attempts" in endpoint.pause_reason
    webhook_endpoint_resume(endpoint=endpoint)
    deliver()
    assert len(receiver.ids()) == 3


def test_a_rotated_secret_signs_beside_the_old_one_for_the_grace_period(receiver, team_memory, approver, deliver):
    memory = team_memory("payments")
    endpoint = _endpoint(receiver, memory.project.team, events=["review.decided"])
    old = endpoint.secret
    new = webhook_endpoint_rotate_secret(endpoint=endpoint)
    receiver.secrets["/hook"] = old  # a receiver not yet updated still verifies
    candidate = _candidate(memory)
    promotion_reject(candidate=candidate, actor=services.Actor.for_user(approver), reason="Not a lesson")
    deliver()
    receiver.secrets["/hook"] = new  # and an updated one too
    (_, _, headers) = receiver.received[0]
    assert len(headers["Webhook-Signature"].split(" ")) == 2
    with time_machine.travel(timezone.now() + timedelta(hours=25), tick=False):
        from memory.webhooks.services import request_for

        _, later = request_for(WebhookDelivery.objects.get())
    assert len(later["webhook-signature"].split(" ")) == 1


def test_a_bulk_decision_of_many_candidates_is_one_event(receiver, team_memory, approver, deliver):
    memory = team_memory("payments")
    _endpoint(receiver, memory.project.team, events=["review.decided"])
    from memory.models import PromotionCandidate

    candidates = _team_candidates(12, memory.project.team)
    outcome = promotion_bulk_decide(
        candidate_ids=[c.pk for c in candidates],
        actor=services.Actor.for_user(approver),
        action="reject",
        reason="Noise",
    )
    assert len(outcome.decided) == 12
    assert WebhookEvent.objects.filter(type="review.decided").count() == 1
    deliver()
    (body,) = [b for _, b, _ in receiver.received]
    assert body["data"]["count"] == 12 and {i["id"] for i in body["data"]["items"]} == {c.pk for c in candidates}
    assert PromotionCandidate.objects.filter(status="rejected").count() == 12


def test_the_event_costs_its_cause_one_insert(team_memory, approver, django_assert_num_queries, receiver):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    memory = team_memory("payments")
    _endpoint(receiver, memory.project.team, events=["review.decided"])
    candidate = _candidate(memory)
    with CaptureQueriesContext(connection) as captured:
        promotion_reject(candidate=candidate, actor=services.Actor.for_user(approver), reason="Not a lesson")
    webhook_queries = [q["sql"] for q in captured.captured_queries if "webhook" in q["sql"].lower()]
    assert len(webhook_queries) == 1 and webhook_queries[0].lstrip().upper().startswith("INSERT")
