"""A paused endpoint is put in front of the people who can fix it: on home and in the digest."""

import pytest
from django.utils import timezone

from memory.digest.services import digest_send_all
from memory.models import WebhookEndpoint
from personas.models import Membership

pytestmark = pytest.mark.django_db


@pytest.fixture
def paused(team_memory):
    memory = team_memory("payments")
    team = memory.project.team
    endpoint = WebhookEndpoint.objects.create(
        team=team,
        url="https://hooks.example.com/payments",
        event_types=["review.waiting"],
        paused_at=timezone.now(),
        pause_reason="paused after 20 failed attempts in a row (last: the receiver answered 500)",
    )
    return team, endpoint


def test_home_tells_the_teams_approvers_and_no_one_else(paused, client, django_user_model):
    team, endpoint = paused
    lead = django_user_model.objects.create_user("lead", email="lead@example.com")
    reader = django_user_model.objects.create_user("reader")
    Membership.objects.create(team=team, user=lead, role="approver")
    Membership.objects.create(team=team, user=reader, role="viewer")
    client.force_login(lead)
    page = client.get("/").content.decode()
    assert "Webhooks paused" in page and endpoint.url in page and "20 failed attempts" in page
    client.force_login(reader)
    assert "Webhooks paused" not in client.get("/").content.decode()


def test_the_digest_names_it_even_when_nothing_else_waits(paused, django_user_model, mailoutbox):
    team, endpoint = paused
    lead = django_user_model.objects.create_user("lead", email="lead@example.com")
    Membership.objects.create(team=team, user=lead, role="approver")
    assert digest_send_all(force=True) == 1
    (message,) = mailoutbox
    assert "webhook endpoint paused" in message.subject
    assert endpoint.url in message.body and "20 failed attempts" in message.body
