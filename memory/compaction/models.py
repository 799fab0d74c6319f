"""Compaction proposals: a condensed working memory a human reads as a diff before it is applied."""

from django.conf import settings
from django.db import models
from django.utils import timezone

__all__ = ["CompactionProposal", "ProposalDrop", "ProposalLine"]


class CompactionProposal(models.Model):
    class Status(models.TextChoices):
        PENDING = "pending", "Pending review"
        APPLIED = "applied", "Applied"
        REJECTED = "rejected", "Rejected"
        INVALID = "invalid", "Invalid"
        STALE = "stale", "Stale"
        REVERTED = "reverted", "Reverted"

    class Trigger(models.TextChoices):
        THRESHOLD = "threshold", "Over threshold"
        MANUAL = "manual", "Requested"
        PRUNING = "pruning", "Pruning (drops only)"

    memory = models.ForeignKey("memory.Memory", on_delete=models.CASCADE, related_name="compaction_proposals")
    base_version = models.PositiveBigIntegerField(help_text="The memory version the proposal was computed from.")
    engine = models.CharField(max_length=20, help_text="offline, or the LLM provider that wrote the proposal.")
    model_name = models.CharField(max_length=100, blank=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    trigger = models.CharField(max_length=10, choices=Trigger.choices, default=Trigger.MANUAL)
    trigger_detail = models.CharField(max_length=300, blank=True)
    validation_errors = models.JSONField(default=list, blank=True)
    raw_output = models.TextField(blank=True, help_text="What the model returned, verbatim (LLM engines only).")
    input_lesson_ids = models.JSONField(default=list, help_text="The active working lessons the proposal covers.")
    # lesson id -> fingerprint of the lesson as it was read. The proposal goes stale only when one of
    # these changes; lessons appended later lie outside it. Empty on proposals made before fingerprints.
    input_fingerprints = models.JSONField(default=dict, blank=True)
    recomputed_from = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="recomputations",
        help_text="The stale proposal this one was recomputed from.",
    )
    target_lines = models.PositiveIntegerField()
    before_text = models.TextField(help_text="working.md as it was when the proposal was computed.")

    created_at = models.DateTimeField(default=timezone.now)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    reason = models.TextField(blank=True, help_text="Why it was rejected, or why it went stale.")
    apply_batch = models.OneToOneField(
        "memory.ChangeBatch", null=True, blank=True, on_delete=models.SET_NULL, related_name="compaction_proposal"
    )

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["memory"], condition=models.Q(status="pending"), name="compaction_one_pending_per_memory"
            ),
            models.CheckConstraint(
                condition=models.Q(status__in=["pending", "applied", "rejected", "invalid", "stale", "reverted"]),
                name="compaction_status_valid",
            ),
        ]

    def __str__(self):
        return f"Compaction proposal #{self.pk} ({self.get_status_display()})"

    @property
    def is_applicable(self):
        return self.status == self.Status.PENDING and not self.validation_errors


class ProposalLine(models.Model):
    """One line of the proposed working memory, with the input lessons it comes from."""

    class Kind(models.TextChoices):
        KEPT = "kept", "Kept"
        MERGED = "merged", "Merged"
        REWRITTEN = "rewritten", "Rewritten"

    proposal = models.ForeignKey(CompactionProposal, on_delete=models.CASCADE, related_name="lines")
    position = models.PositiveIntegerField()
    category = models.CharField(max_length=20)
    text = models.TextField()
    refs = models.JSONField(default=list, blank=True, help_text="Refs as text: path#L1-L2.")
    source_ids = models.JSONField(default=list, help_text="Ids of the input lessons this line derives from.")
    kind = models.CharField(max_length=10, choices=Kind.choices)
    edited = models.BooleanField(default=False)

    class Meta:
        ordering = ["proposal_id", "position"]
        constraints = [
            models.UniqueConstraint(fields=["proposal", "position"], name="proposal_line_unique_position"),
        ]

    def __str__(self):
        return f"[{self.category}] {self.text[:60]}"


class ProposalDrop(models.Model):
    """An input lesson the proposal leaves out, and why."""

    proposal = models.ForeignKey(CompactionProposal, on_delete=models.CASCADE, related_name="drops")
    lesson = models.ForeignKey("memory.Lesson", on_delete=models.CASCADE, related_name="+")
    reason = models.CharField(max_length=500)
    had_refs = models.BooleanField(default=False)
    # False when the compactor left the lesson out without saying so.
    listed = models.BooleanField(default=True)

    class Meta:
        ordering = ["proposal_id", "lesson_id"]
        constraints = [
            models.UniqueConstraint(fields=["proposal", "lesson"], name="proposal_drop_unique_lesson"),
        ]

    def __str__(self):
        return f"Lesson #{self.lesson_id} left out: {self.reason[:60]}"
