"""Promotion candidates: working lessons that keep saying the same thing, proposed for core."""

from django.conf import settings
from django.db import models
from django.utils import timezone

__all__ = ["PromotionCandidate"]


class PromotionCandidate(models.Model):
    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        APPROVED = "approved", "Approved"
        REJECTED = "rejected", "Rejected"
        SUPERSEDED = "superseded", "Superseded"
        REVERTED = "reverted", "Approval reverted"

    memory = models.ForeignKey("memory.Memory", on_delete=models.CASCADE, related_name="promotion_candidates")
    text = models.TextField(help_text="The proposed core lesson.")
    category = models.CharField(max_length=20)
    refs = models.JSONField(default=list, blank=True, help_text="Proposed refs, as path#Lx-Ly strings.")
    supporting = models.ManyToManyField("memory.Lesson", related_name="promotion_candidates")
    # What the proposal was computed from: lesson ids and confirmation ids. A group whose evidence
    # is already covered by a pending, rejected or reverted candidate is not proposed again.
    evidence = models.JSONField(default=dict)
    fingerprint = models.CharField(max_length=64, db_index=True)
    # lesson id -> content hash and status when proposed; approval asks for re-review if they moved.
    supporting_state = models.JSONField(default=dict)
    distinct_dates = models.PositiveIntegerField(default=0)
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.PENDING)
    engine = models.CharField(max_length=40, help_text="Engine that worded the proposal.")
    engine_note = models.TextField(blank=True, help_text="Why the model's wording was not used, if it was not.")
    created_at = models.DateTimeField(default=timezone.now)
    decided_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    decided_by_label = models.CharField(max_length=200, blank=True)
    decided_at = models.DateTimeField(null=True, blank=True)
    reason = models.TextField(blank=True)
    edited = models.BooleanField(default=False, help_text="The approver changed the proposed wording.")
    core_lesson = models.ForeignKey(
        "memory.Lesson", null=True, blank=True, on_delete=models.SET_NULL, related_name="promoted_from_candidates"
    )
    batch = models.ForeignKey(
        "memory.ChangeBatch", null=True, blank=True, on_delete=models.SET_NULL, related_name="promotion_candidates"
    )
    revert_batch = models.ForeignKey(
        "memory.ChangeBatch", null=True, blank=True, on_delete=models.SET_NULL, related_name="reverted_promotions"
    )

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["memory", "status"], name="promotion_memory_status")]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(status__in=["pending", "approved", "rejected", "superseded", "reverted"]),
                name="promotion_status_valid",
            ),
        ]

    def __str__(self):
        return f"Promotion #{self.pk} ({self.status}): {self.text[:60]}"

    @property
    def is_pending(self):
        return self.status == self.Status.PENDING
