"""A person's choices about the email the product sends them."""

from django.conf import settings
from django.db import models

__all__ = ["DigestPreference"]


class DigestPreference(models.Model):
    """Whether an approver gets the daily email of what waits for review, and when the last one went.
    No row means the default: the digest is on."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, primary_key=True, related_name="digest_preference"
    )
    daily_digest = models.BooleanField(default=True, help_text="Email me each day what waits for my review.")
    last_sent_at = models.DateTimeField(null=True, blank=True)

    def __str__(self):
        return f"Digest preference of {self.user}"
