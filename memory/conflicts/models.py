"""Conflicts between lessons (a newer lesson supersedes or contradicts an older one) and proposed expiries."""

import hashlib

from django.conf import settings
from django.db import models
from django.utils import timezone

__all__ = ["ConflictModelCheck", "ExpiryProposal", "LessonConflict", "conflict_fingerprint"]


def conflict_fingerprint(older_text: str, newer_text: str) -> str:
    """The same two texts make the same fingerprint whichever way round: a pair dismissed as
    compatible is never proposed again, even after its lessons are re-imported under new ids."""
    texts = sorted(" ".join(t.lower().split()) for t in (older_text, newer_text))
    return hashlib.sha256("\x1f".join(texts).encode()).hexdigest()


class LessonConflict(models.Model):
    class Relation(models.TextChoices):
        SUPERSEDES = "supersedes", "Newer supersedes older"
        CONTRADICTS = "contradicts", "Contradict each other"

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        RESOLVED = "resolved", "Resolved"
        DISMISSED = "dismissed", "Dismissed (both hold)"

    class Decision(models.TextChoices):
        NONE = "", "Not decided"
        KEEP_NEWER = "keep_newer", "Kept the newer lesson"
        KEEP_OLDER = "keep_older", "Kept the older lesson"
        KEEP_BOTH = "keep_both", "Kept both"

    memory = models.ForeignKey("memory.Memory", on_delete=models.CASCADE, related_name="lesson_conflicts")
    older = models.ForeignKey("memory.Lesson", on_delete=models.CASCADE, related_name="conflicts_as_older")
    newer = models.ForeignKey("memory.Lesson", on_delete=models.CASCADE, related_name="conflicts_as_newer")
    relation = models.CharField(max_length=12, choices=Relation.choices)
    engine = models.CharField(max_length=40, default="offline")
    evidence = models.TextField(blank=True, help_text="What the two lessons disagree on, as the detector saw it.")
    fingerprint = models.CharField(max_length=64)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    decision = models.CharField(max_length=12, choices=Decision.choices, blank=True, default="")
    # The batch that carried out the decision's lesson writes (revert it to undo them).
    batch = models.ForeignKey(
        "memory.ChangeBatch", null=True, blank=True, on_delete=models.SET_NULL, related_name="+", db_index=False
    )
    created_at = models.DateTimeField(default=timezone.now)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+", db_index=False
    )
    decided_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-id"]
        indexes = [
            models.Index(fields=["memory", "fingerprint"], name="conflict_memory_fingerprint"),
            models.Index(fields=["memory", "status"], name="conflict_memory_status"),
            models.Index(fields=["older"], name="conflict_older"),
            models.Index(fields=["newer"], name="conflict_newer"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(relation__in=["supersedes", "contradicts"]), name="conflict_relation_valid"
            ),
            models.CheckConstraint(
                condition=models.Q(status__in=["pending", "resolved", "dismissed"]), name="conflict_status_valid"
            ),
        ]

    def __str__(self):
        return f"{self.older_id} {self.relation} {self.newer_id} ({self.status})"


class ExpiryProposal(models.Model):
    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        ACCEPTED = "accepted", "Accepted"
        REJECTED = "rejected", "Rejected"

    memory = models.ForeignKey("memory.Memory", on_delete=models.CASCADE, related_name="expiry_proposals")
    lesson = models.ForeignKey("memory.Lesson", on_delete=models.CASCADE, related_name="expiry_proposals")
    expires_on = models.DateField(null=True, blank=True)
    expires_when = models.TextField(blank=True, help_text="The event the lesson holds until, in its own words.")
    evidence = models.TextField(blank=True)
    engine = models.CharField(max_length=40, default="offline")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    # The batch that set the lesson's expiry on acceptance (revert it and the proposal waits again).
    batch = models.ForeignKey(
        "memory.ChangeBatch", null=True, blank=True, on_delete=models.SET_NULL, related_name="+", db_index=False
    )
    created_at = models.DateTimeField(default=timezone.now)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+", db_index=False
    )
    decided_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-id"]
        indexes = [
            models.Index(fields=["memory", "status"], name="expiry_memory_status"),
            # Reverting a batch finds the proposal it accepted; most proposals have none.
            models.Index(fields=["batch"], name="expiry_batch", condition=models.Q(batch__isnull=False)),
        ]
        constraints = [
            models.UniqueConstraint(fields=["lesson"], name="expiry_one_proposal_per_lesson"),
        ]

    def __str__(self):
        return f"lesson {self.lesson_id} until {self.expires_on or self.expires_when} ({self.status})"


class ConflictModelCheck(models.Model):
    """A lesson the model engine has compared with the rest of its memory, as its text was then.

    A later run sends only lessons without a check of the current text (new or edited ones); an
    edited lesson (another content hash) counts as not compared."""

    memory = models.ForeignKey("memory.Memory", on_delete=models.CASCADE, related_name="conflict_model_checks")
    lesson = models.ForeignKey("memory.Lesson", on_delete=models.CASCADE, related_name="conflict_model_checks")
    engine = models.CharField(max_length=40)
    content_hash = models.CharField(max_length=64)
    checked_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [models.Index(fields=["memory", "engine"], name="conflict_check_memory_engine")]
        constraints = [models.UniqueConstraint(fields=["lesson", "engine"], name="conflict_check_one_per_engine")]

    def __str__(self):
        return f"lesson {self.lesson_id} checked by {self.engine}"
