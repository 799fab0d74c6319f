"""A team's approver manages the team's endpoints in the admin; the secret is shown once."""

import pytest
from django.urls import reverse

from memory.models import WebhookEndpoint
from personas.models import Membership

pytestmark = pytest.mark.django_db


@pytest.fixture
def lead_client(client, team_memory, django_user_model):
    memory = team_memory("payments")
    lead = django_user_model.objects.create_user("lead", is_staff=True)
    Membership.objects.create(team=memory.project.team, user=lead, role="approver")
    client.force_login(lead)
    return client, memory.project.team


def _add(client, team, url):
    return client.post(
        reverse("admin:memory_webhookendpoint_add"),
        {
            "team": team.pk if team else "",
            "url": url,
            "description": "",
            "event_types": ["review.waiting", "review.decided"],
            "format": "slack",
            "enabled": "on",
        },
        follow=True,
    )


def test_a_team_approver_adds_an_endpoint_and_sees_its_secret_once(lead_client, settings):
    client, team = lead_client
    response = _add(client, team, "https://93.184.216.34/hooks/nw")
    endpoint = WebhookEndpoint.objects.get()
    assert endpoint.team == team and endpoint.event_types == ["review.waiting", "review.decided"]
    assert endpoint.secret in response.content.decode()
    page = client.get(reverse("admin:memory_webhookendpoint_change", args=[endpoint.pk])).content.decode()
    assert endpoint.secret not in page and endpoint.secret[:10] in page


def test_a_private_address_is_refused_with_a_reason_and_nothing_is_saved(lead_client, settings):
    settings.WEBHOOKS_ALLOW_PRIVATE = False
    client, team = lead_client
    response = _add(client, team, "https://169.254.169.254/latest/")
    assert "link-local" in response.content.decode()
    assert not WebhookEndpoint.objects.exists()


def test_a_team_approver_cannot_add_a_site_wide_endpoint(lead_client):
    client, _ = lead_client
    response = _add(client, None, "https://93.184.216.34/hooks/nw")
    assert "This field is required" in response.content.decode()
    assert not WebhookEndpoint.objects.exists()
