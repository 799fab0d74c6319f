"""What the webhooks slice shows people: endpoints that stopped sending, for those who can fix them."""

from memory.access import APPROVE, access_for, scope
from memory.webhooks.models import WebhookEndpoint


def paused_endpoints_for(user) -> list[WebhookEndpoint]:
    """Paused endpoints of the teams where `user` approves (every team's for a site-wide approver);
    no query for someone who approves nowhere."""
    if not access_for(user).anywhere(APPROVE):
        return []
    paused = WebhookEndpoint.objects.filter(paused_at__isnull=False).select_related("team").order_by("paused_at")
    return list(scope(paused, user, APPROVE, via="team")[:20])
