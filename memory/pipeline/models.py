"""Observation pipeline runs (observer → reflector → pruner)."""

from django.db import models
from django.utils import timezone

__all__ = ["PipelineRun"]

PHASES = ("observer", "reflector", "pruner")


class PipelineRun(models.Model):
    url_namespace = "pipeline"  # its page is pipeline:run (review events link to it)

    class Status(models.TextChoices):
        RUNNING = "running", "Running"
        COMPLETED = "completed", "Completed"
        FAILED = "failed", "Failed"

    memory = models.ForeignKey("memory.Memory", on_delete=models.CASCADE, related_name="pipeline_runs")
    interaction = models.ForeignKey("memory.Interaction", null=True, blank=True, on_delete=models.SET_NULL)
    engine = models.CharField(max_length=20, blank=True)
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.RUNNING)
    phase = models.CharField(max_length=12, blank=True)
    completed_phases = models.JSONField(default=list, blank=True)
    pass_no = models.PositiveSmallIntegerField(default=0)
    max_passes = models.PositiveSmallIntegerField(default=0)
    tool_calls = models.PositiveIntegerField(default=0)
    observations_added = models.PositiveIntegerField(default=0)
    duplicates_skipped = models.PositiveIntegerField(default=0)
    rejected = models.PositiveIntegerField(default=0)
    starting_reflections = models.PositiveIntegerField(default=0)
    starting_observations = models.PositiveIntegerField(default=0)
    reflections_added = models.PositiveIntegerField(default=0)
    reflections_merged = models.PositiveIntegerField(default=0)
    observations_dropped = models.PositiveIntegerField(default=0)
    batch = models.ForeignKey("memory.ChangeBatch", null=True, blank=True, on_delete=models.SET_NULL)
    proposal_id = models.PositiveBigIntegerField(null=True, blank=True, help_text="Compaction proposal of drops.")
    error = models.TextField(blank=True)
    created_by = models.ForeignKey("auth.User", null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(default=timezone.now, help_text="Last progress of a running run.")
    # A person looked at a run that went wrong: it leaves the review queue.
    looked_at = models.DateTimeField(null=True, blank=True)
    looked_by = models.ForeignKey("auth.User", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            # The review queue's failed runs to look at: a few among every run ever made.
            models.Index(
                fields=["memory", "created_at"],
                name="pipeline_run_to_look_at",
                condition=models.Q(status__in=["failed"], looked_at__isnull=True),
            ),
        ]

    def __str__(self):
        return f"Pipeline run #{self.pk}"

    @property
    def is_running(self):
        return self.status == self.Status.RUNNING
