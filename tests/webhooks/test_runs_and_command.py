"""Runs that need a look, the add_webhook command, and delivery straight after the commit."""

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from memory import services
from memory.models import RefinementRun, WebhookEndpoint
from memory.promotions.services import promotion_reject
from memory.refinement.selectors import runs_needing_a_look
from memory.refinement.services import refinement_run_create
from memory.refinement.session import finish_run
from memory.review_queue import run_mark_looked_at
from memory.webhooks.services import webhook_endpoint_create
from tests.webhooks.test_delivery import _candidate

pytestmark = pytest.mark.django_db


def test_a_failed_run_waits_for_a_look_and_looking_at_it_is_a_decision(receiver, team_memory, approver, deliver):
    memory = team_memory("payments")
    endpoint = webhook_endpoint_create(
        team=memory.project.team, url=receiver.url("/hook"), event_types=["review.waiting", "review.decided"]
    )
    receiver.listen("/hook", endpoint.secret)
    run = refinement_run_create(memory=memory, trigger="manual", user=approver)
    finish_run(run, RefinementRun.Status.FAILED, error="The model was not reachable")
    run_mark_looked_at(run=run, user=approver, needing_a_look=runs_needing_a_look())
    deliver()
    bodies = [b for _, b, _ in receiver.received]
    assert [(b["type"], b["data"]["items"][0]["kind"]) for b in bodies] == [
        ("review.waiting", "refinement run"),
        ("review.decided", "refinement run"),
    ]
    assert bodies[1]["data"]["decision"] == "looked at"
    assert bodies[0]["data"]["items"][0]["url"].endswith(f"/refinement/runs/{run.pk}/")


def test_add_webhook_prints_the_id_and_the_secret(team_memory):
    memory = team_memory("payments")
    out = StringIO()
    call_command(
        "add_webhook",
        "--team",
        "payments",
        "--url",
        "https://hooks.example.com/nw",
        "--events",
        "review.waiting,review.decided",
        "--format",
        "slack",
        stdout=out,
        stderr=StringIO(),
    )
    endpoint = WebhookEndpoint.objects.get()
    assert out.getvalue().splitlines() == [f"id {endpoint.pk}", f"secret {endpoint.secret}"]
    assert endpoint.secret.startswith("whsec_") and endpoint.team == memory.project.team
    assert (endpoint.format, endpoint.event_types) == ("slack", ["review.waiting", "review.decided"])


@pytest.mark.parametrize(
    "args, words",
    [
        (["--team", "nope", "--url", "https://h.example.com/", "--events", "review.waiting"], "no team"),
        (["--url", "https://10.0.0.1/", "--events", "review.waiting"], "private network"),
        (["--url", "https://h.example.com/", "--events", "lesson.eaten"], "unknown event types"),
    ],
)
def test_add_webhook_refuses_bad_input_and_adds_nothing(args, words, settings):
    settings.WEBHOOKS_ALLOW_PRIVATE = False
    with pytest.raises(CommandError, match=words):
        call_command("add_webhook", *args, stdout=StringIO(), stderr=StringIO())
    assert not WebhookEndpoint.objects.exists()


def test_without_a_broker_the_event_is_sent_once_the_decision_commits(
    receiver, team_memory, approver, django_capture_on_commit_callbacks
):
    memory = team_memory("payments")
    endpoint = webhook_endpoint_create(
        team=memory.project.team, url=receiver.url("/hook"), event_types=["review.decided"]
    )
    receiver.listen("/hook", endpoint.secret)
    with django_capture_on_commit_callbacks(execute=True) as queued:  # one transaction, as a request is
        candidate = _candidate(memory)
        promotion_reject(candidate=candidate, actor=services.Actor.for_user(approver), reason="Not a lesson")
    assert receiver.types() == ["review.decided"]
    # Two events (the candidate waits, then is rejected) queue one send.
    assert [c.__qualname__.rsplit("[", 1)[-1] for c in queued].count("memory.webhooks.dispatch]") == 1
