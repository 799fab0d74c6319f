"""Where each code reference was last seen true in the project's repository, and the checks that say so."""

from django.db import models
from django.utils import timezone

__all__ = ["RefAnchor", "RefCheck", "RefStatus"]


class RefStatus(models.TextChoices):
    UNANCHORED = "unanchored", "Not checked yet"
    VALID = "valid", "Valid"
    MOVED = "moved", "Moved"
    CHANGED = "changed", "Changed"
    GONE = "gone", "File gone"


# A person should look at these: the ref no longer points at the code it was written about.
NEEDS_REVIEW = (RefStatus.MOVED, RefStatus.CHANGED, RefStatus.GONE)


class RefAnchor(models.Model):
    """A lesson's ref (path and range) with the fingerprint of the lines it pointed at.

    Keyed by the ref's text within its lesson rather than by the LessonRef row: writes replace
    ref rows, and a revert that brings back an earlier range must find that range's anchor (with
    its status and proposal) again instead of anchoring it afresh on whatever code is there now.
    """

    lesson = models.ForeignKey("memory.Lesson", on_delete=models.CASCADE, related_name="ref_anchors")
    key = models.CharField(max_length=540, help_text="The ref as text: path#Lx-Ly.")
    path = models.CharField(max_length=500)
    start_line = models.PositiveIntegerField(null=True, blank=True)
    end_line = models.PositiveIntegerField(null=True, blank=True)
    status = models.CharField(max_length=12, choices=RefStatus.choices, default=RefStatus.UNANCHORED)
    commit = models.CharField(max_length=40, blank=True, help_text="The last commit the ref was verified at.")
    checked_commit = models.CharField(max_length=40, blank=True, help_text="The head the last check read.")
    # Normalised text of the referenced lines: all of them, the first one (to find them again
    # elsewhere in the file quickly), and up to three lines either side (to choose between copies).
    fingerprint = models.CharField(max_length=64, blank=True)
    first_line = models.CharField(max_length=32, blank=True)
    context_before = models.CharField(max_length=64, blank=True)
    context_after = models.CharField(max_length=64, blank=True)
    proposed_path = models.CharField(max_length=500, blank=True)
    proposed_start = models.PositiveIntegerField(null=True, blank=True)
    proposed_end = models.PositiveIntegerField(null=True, blank=True)
    note = models.CharField(max_length=300, blank=True)
    checked_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["lesson", "key"], name="refanchor_unique_lesson_key"),
            models.CheckConstraint(
                condition=models.Q(status__in=["unanchored", "valid", "moved", "changed", "gone"]),
                name="refanchor_status_valid",
            ),
        ]
        indexes = [models.Index(fields=["status"], name="refanchor_status")]

    def __str__(self):
        return f"{self.key} ({self.status})"

    @property
    def needs_review(self):
        return self.status in NEEDS_REVIEW

    @property
    def is_stale(self):
        return self.status in (RefStatus.CHANGED, RefStatus.GONE)

    @property
    def proposed_text(self):
        if self.status != RefStatus.MOVED:
            return ""
        from memory.refs.parsing import Ref

        return Ref(self.proposed_path or self.path, self.proposed_start, self.proposed_end).as_text()


class RefCheck(models.Model):
    """One check of a project's refs against its checkout: what head it read and what it found."""

    project = models.ForeignKey("personas.Project", on_delete=models.CASCADE, related_name="ref_checks")
    started_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)
    head = models.CharField(max_length=40, blank=True)
    refs_checked = models.PositiveIntegerField(default=0)
    counts = models.JSONField(default=dict, blank=True, help_text="{status: number of refs}")
    error = models.TextField(blank=True)

    class Meta:
        ordering = ["-started_at", "-id"]
        get_latest_by = "started_at"

    def __str__(self):
        return f"Ref check of {self.project} at {self.started_at:%Y-%m-%d %H:%M}"
