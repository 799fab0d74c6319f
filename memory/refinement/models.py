"""Refinement: prompt versions per persona, runs, and every operation a run attempted."""

from django.conf import settings
from django.db import models
from django.utils import timezone

__all__ = ["REFINEMENT_OP_CAP", "RefinementOperation", "RefinementPromptVersion", "RefinementRun"]

# At most this many mutating operations per run, whatever the model asks.
REFINEMENT_OP_CAP = 10


class RefinementPromptVersion(models.Model):
    """One saved state of a persona's refinement prompt. Restoring an old one saves a new version."""

    persona = models.ForeignKey("personas.Persona", on_delete=models.CASCADE, related_name="refinement_prompt_versions")
    number = models.PositiveIntegerField()
    text = models.TextField(blank=True, help_text="Blank: the conservative default.")
    note = models.CharField(max_length=200, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-number"]
        constraints = [
            models.UniqueConstraint(fields=["persona", "number"], name="refinement_prompt_version_unique"),
        ]

    def __str__(self):
        return f"{self.persona} prompt v{self.number}"


class RefinementRun(models.Model):
    url_namespace = "refinement"  # its page is refinement:run (review events link to it)

    class Status(models.TextChoices):
        RUNNING = "running", "Running"
        COMPLETED = "completed", "Completed"
        DECLINED = "declined", "Declined"
        TERMINATED = "terminated", "Rolled back (terminated)"
        FAILED = "failed", "Failed"
        REVERTED = "reverted", "Reverted"

    FINISHED = (Status.COMPLETED, Status.DECLINED, Status.TERMINATED, Status.FAILED, Status.REVERTED)

    memory = models.ForeignKey("memory.Memory", on_delete=models.CASCADE, related_name="refinement_runs")
    engine = models.CharField(max_length=40, blank=True)
    trigger = models.CharField(max_length=20, default="manual")  # manual | nightly | demo
    requested_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.RUNNING, db_index=True)
    consent_prompt = models.TextField(blank=True)
    consent_answer = models.TextField(blank=True)
    prompt_version = models.ForeignKey(RefinementPromptVersion, null=True, blank=True, on_delete=models.SET_NULL)
    system_prompt = models.TextField(blank=True, help_text="The exact system text sent.")
    prompt_sent = models.TextField(blank=True, help_text="The exact refinement prompt sent.")
    mass_before = models.PositiveIntegerField(default=0)
    mass_after = models.PositiveIntegerField(null=True, blank=True)
    # What the retention check last counted (retention = mass_counted / mass_before): the lessons kept,
    # with each consolidation credited for the text of the lessons it merged that it still holds.
    mass_counted = models.PositiveIntegerField(null=True, blank=True)
    # A person looked at a run that went wrong: it leaves the review queue.
    looked_at = models.DateTimeField(null=True, blank=True)
    looked_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    retention = models.FloatField(default=1.0)
    threshold = models.FloatField(default=0.90)
    op_cap = models.PositiveSmallIntegerField(default=REFINEMENT_OP_CAP)
    ops_used = models.PositiveSmallIntegerField(default=0)
    current_action = models.CharField(max_length=200, blank=True)
    tokens_in = models.PositiveIntegerField(default=0)
    tokens_out = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True)
    batch = models.OneToOneField(
        "memory.ChangeBatch", null=True, blank=True, on_delete=models.SET_NULL, related_name="refinement_run"
    )
    started_at = models.DateTimeField(default=timezone.now)
    heartbeat_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-started_at", "-id"]
        indexes = [
            models.Index(fields=["status", "heartbeat_at"], name="refinement_run_status_beat"),
            # The review queue's runs to look at: a few among every run ever made.
            models.Index(
                fields=["memory", "started_at"],
                name="refinement_run_to_look_at",
                condition=models.Q(status__in=["terminated", "failed"], looked_at__isnull=True),
            ),
        ]

    def __str__(self):
        return f"Refinement run #{self.pk} ({self.status})"

    @property
    def is_running(self):
        return self.status == self.Status.RUNNING

    @property
    def retention_percent(self):
        return round(self.retention * 100, 1)

    @property
    def threshold_percent(self):
        return round(self.threshold * 100, 1)


class RefinementOperation(models.Model):
    class Outcome(models.TextChoices):
        APPLIED = "applied", "Applied"
        REFUSED = "refused", "Refused"
        ERROR = "error", "Error"
        ROLLED_BACK = "rolled_back", "Rolled back"

    run = models.ForeignKey(RefinementRun, on_delete=models.CASCADE, related_name="operations")
    seq = models.PositiveIntegerField()
    action = models.CharField(max_length=20)
    arguments = models.JSONField(default=dict, blank=True)
    before = models.JSONField(default=list, blank=True, help_text="Lessons the operation read or changed, before.")
    after = models.JSONField(default=list, blank=True, help_text="The same lessons after (and any new lesson).")
    outcome = models.CharField(max_length=12, choices=Outcome.choices)
    mutating = models.BooleanField(default=False)
    refusal_reason = models.TextField(blank=True)
    retention_after = models.FloatField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["run_id", "seq"]
        constraints = [models.UniqueConstraint(fields=["run", "seq"], name="refinement_operation_seq_unique")]

    def __str__(self):
        return f"#{self.seq} {self.action} ({self.outcome})"
