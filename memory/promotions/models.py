"""Promotion candidates: working lessons that keep saying the same thing, proposed for core."""

from django.conf import settings
from django.db import models
from django.utils import timezone

__all__ = ["DetectionRun", "ModelGroup", "ModelPlacement", "PromotionBulkDecision", "PromotionCandidate"]


class PromotionCandidate(models.Model):
    class FoundBy(models.TextChoices):
        WORDS = "words", "shared words"
        MODEL = "model", "the model"
        BOTH = "both", "shared words and the model"

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
    # Which detection proposed it; pending candidates of an older detector are re-evaluated once.
    detector = models.CharField(max_length=40, blank=True, default="")
    verification_note = models.TextField(blank=True, help_text="What the model said when it checked the group.")
    # How detection found the group (blank: a reflection, or a candidate older than this field).
    found_by = models.CharField(max_length=5, choices=FoundBy.choices, blank=True, default="")
    proposal_reason = models.TextField(blank=True, help_text="The model's one-line reason for grouping the lessons.")
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
    # The bulk decision it was decided in, if any; it still has its own batch, revertible alone.
    bulk = models.ForeignKey(
        "memory.PromotionBulkDecision", null=True, blank=True, on_delete=models.SET_NULL, related_name="candidates"
    )

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["memory", "status"], name="promotion_memory_status"),
            # The inbox pages through pending candidates oldest first.
            models.Index(fields=["status", "created_at", "id"], name="promotion_status_waiting"),
        ]
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

    @property
    def supporting_count(self):
        """How many lessons back it, read from its evidence so a card needs no query for it."""
        return len(self.evidence.get("lessons", ()))

    @property
    def from_pipeline(self):
        """A reflection of the observation pipeline, not a lesson found recurring on distinct dates."""
        return self.evidence.get("source") == "reflector"

    @property
    def pipeline_run_id(self):
        return self.evidence.get("run")


class PromotionBulkDecision(models.Model):
    """One approval or rejection of several candidates at once, listed as one action in history.

    Each candidate it decided keeps its own batch (revertible alone); this row records what was
    asked and how each part went."""

    class Action(models.TextChoices):
        APPROVE = "approve", "Bulk approval"
        REJECT = "reject", "Bulk rejection"

    action = models.CharField(max_length=10, choices=Action.choices)
    reason = models.TextField(blank=True)
    decided_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    decided_by_label = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    requested = models.JSONField(default=list, help_text="Candidate ids asked for.")
    # {"decided": [ids], "already": [{"id", "message"}], "changed": [{"id", "message"}], "refused": [...]}
    outcome = models.JSONField(default=dict)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self):
        return f"{self.get_action_display()} #{self.pk} of {len(self.requested)} candidates"

    @property
    def decided_count(self):
        return len(self.outcome.get("decided", ()))


class ModelGroup(models.Model):
    """Working lessons the model said state one lesson, with its one-line summary.

    Kept between detection runs so that a later run shows the model only the lessons it has not
    placed yet, next to these summaries, instead of the whole memory again.
    """

    memory = models.ForeignKey("memory.Memory", on_delete=models.CASCADE, related_name="model_groups")
    summary = models.CharField(max_length=200)
    reason = models.CharField(max_length=300, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["id"]

    def __str__(self):
        return f"Model group #{self.pk}: {self.summary[:60]}"


class ModelPlacement(models.Model):
    """A working lesson the model has been shown, and the group it put it in (none: it stands alone).

    An edited lesson (another content hash) counts as not placed and is shown again.
    """

    memory = models.ForeignKey("memory.Memory", on_delete=models.CASCADE, related_name="model_placements")
    lesson = models.OneToOneField("memory.Lesson", on_delete=models.CASCADE, related_name="model_placement")
    group = models.ForeignKey(ModelGroup, null=True, blank=True, on_delete=models.SET_NULL, related_name="placements")
    content_hash = models.CharField(max_length=64)
    placed_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [models.Index(fields=["memory", "group"], name="placement_memory_group")]

    def __str__(self):
        return (
            f"Lesson #{self.lesson_id} in group #{self.group_id}"
            if self.group_id
            else f"Lesson #{self.lesson_id} alone"
        )


class DetectionRun(models.Model):
    """One detection run of a memory: its engine, what it cost and how it ended."""

    class Status(models.TextChoices):
        DONE = "done", "Done"
        FAILED = "failed", "Failed"
        OVER_BUDGET = "over_budget", "Stopped by the token budget"

    memory = models.ForeignKey("memory.Memory", on_delete=models.CASCADE, related_name="detection_runs")
    engine = models.CharField(max_length=40)
    status = models.CharField(max_length=12, choices=Status.choices)
    message = models.TextField(blank=True)
    calls = models.PositiveIntegerField(default=0, help_text="Model calls (HTTP attempts included).")
    tokens_in = models.PositiveIntegerField(default=0)
    tokens_out = models.PositiveIntegerField(default=0)
    lessons_sent = models.PositiveIntegerField(default=0, help_text="Lessons shown to the model for grouping.")
    created = models.PositiveIntegerField(default=0, help_text="Candidates created.")
    started_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-started_at", "-id"]
        indexes = [models.Index(fields=["memory", "-started_at"], name="detectionrun_memory_recent")]

    def __str__(self):
        return f"Detection of memory {self.memory_id} ({self.status}, {self.calls} calls)"
