"""Where events leave the product: team endpoints, the outbox of events, and each delivery's log.

An event is written in the transaction of the change that caused it (one INSERT, the outbox row);
a worker later gives it one delivery per endpoint that wants it and sends each until the receiver
answers 2xx or the retry window closes. Nothing here is removed by a send: a failed delivery stays
in the log with its last answer, and a person can send it again.
"""

import secrets
import uuid

from django.conf import settings
from django.db import models

__all__ = ["EVENT_TYPES", "WebhookDelivery", "WebhookEndpoint", "WebhookEvent", "new_event_id", "new_secret"]

# The events a receiver can subscribe to (their names are part of the product's interface).
EVENT_TYPES = {
    "review.waiting": "Something new waits for review",
    "review.decided": "A review item was decided",
    "review.overdue": "Review items are past the overdue threshold (daily)",
    "sync.failed": "A Night Watch folder could not be synced",
}
TEST_EVENT = "webhook.test"


def new_event_id():
    return f"evt_{uuid.uuid4().hex}"


def new_secret():
    """A signing secret in the Standard Webhooks form: whsec_ and 32 random bytes in base64."""
    import base64

    return "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()


class WebhookEndpoint(models.Model):
    class Format(models.TextChoices):
        STANDARD = "standard", "Standard Webhooks (signed JSON)"
        SLACK = "slack", "Slack incoming webhook"

    team = models.ForeignKey(
        "personas.Team",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="webhook_endpoints",
        help_text="The team whose events it receives; empty: every team's (site-wide).",
    )
    url = models.URLField(max_length=2000, verbose_name="URL")
    description = models.CharField(max_length=200, blank=True)
    event_types = models.JSONField(default=list, help_text="The event types it receives.")
    format = models.CharField(max_length=10, choices=Format.choices, default=Format.STANDARD)
    include_lesson_text = models.BooleanField(
        default=False, help_text="Send lesson text in events (left out unless this is on)."
    )
    enabled = models.BooleanField(default=True, help_text="Off: events wait for it, nothing is sent.")
    paused_at = models.DateTimeField(null=True, blank=True)
    pause_reason = models.CharField(max_length=300, blank=True)
    consecutive_failures = models.PositiveIntegerField(default=0)
    secret = models.CharField(max_length=100, default=new_secret, editable=False)
    previous_secret = models.CharField(max_length=100, blank=True, editable=False)
    previous_secret_until = models.DateTimeField(null=True, blank=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["team_id", "id"]
        verbose_name = "webhook endpoint"

    def __str__(self):
        return f"{self.get_format_display()} → {self.url}"

    @property
    def is_active(self):
        return self.enabled and self.paused_at is None


class WebhookEvent(models.Model):
    """The outbox: one row per event, written with the change that caused it."""

    uid = models.CharField(max_length=40, unique=True, default=new_event_id, editable=False)
    type = models.CharField(max_length=40)
    team = models.ForeignKey("personas.Team", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    memory = models.ForeignKey("memory.Memory", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    # For a memory's events the team is read when the event is fanned out (so writing one costs one
    # INSERT); `team` is set for events that have no memory, or when the caller already knows it.
    data = models.JSONField(default=dict)
    # Lesson text by item, sent only to endpoints that ask for it.
    lesson_texts = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    fanned_out_at = models.DateTimeField(null=True, blank=True)
    # A test event goes to one endpoint only.
    only_endpoint = models.ForeignKey(
        WebhookEndpoint, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )

    class Meta:
        ordering = ["id"]
        indexes = [
            models.Index(fields=["id"], name="webhook_event_not_fanned", condition=models.Q(fanned_out_at__isnull=True))
        ]

    def __str__(self):
        return f"{self.type} {self.uid}"


class WebhookDelivery(models.Model):
    class Status(models.TextChoices):
        PENDING = "pending", "Waiting to be sent"
        DELIVERED = "delivered", "Delivered"
        FAILED = "failed", "Gave up"

    event = models.ForeignKey(WebhookEvent, on_delete=models.CASCADE, related_name="deliveries")
    endpoint = models.ForeignKey(WebhookEndpoint, on_delete=models.CASCADE, related_name="deliveries")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    # A worker that takes a delivery holds it until then; a worker that dies lets it go by itself.
    leased_until = models.DateTimeField(null=True, blank=True)
    last_attempt_at = models.DateTimeField(null=True, blank=True)
    last_status_code = models.PositiveIntegerField(null=True, blank=True)
    last_error = models.CharField(max_length=500, blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-id"]
        constraints = [models.UniqueConstraint(fields=["event", "endpoint"], name="webhook_delivery_once_per_endpoint")]
        indexes = [
            models.Index(
                fields=["next_attempt_at"],
                name="webhook_delivery_due",
                condition=models.Q(status="pending"),
            ),
            models.Index(fields=["endpoint", "-id"], name="webhook_delivery_by_endpoint"),
        ]
        verbose_name_plural = "webhook deliveries"

    def __str__(self):
        return f"{self.event} → {self.endpoint_id}: {self.status}"
