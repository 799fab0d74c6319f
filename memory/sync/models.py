"""What a sync pass remembers about each Night Watch memory folder, and the lines both sides changed."""

from django.conf import settings
from django.db import models
from django.utils import timezone

__all__ = ["SyncConflict", "SyncedFolder"]


class SyncedFolder(models.Model):
    """One memory folder under a synced root, as the last pass left it.

    `files` holds, per file (core.md, working.md), what the file held when last read or written:
    its stat (inode, size, mtime) so an unchanged folder costs a stat, its sha256 and size so an
    append is told from a rewrite, and one [line key, lesson id, conflict id] per lesson line so a
    pass knows which lesson a line Night Watch removed or rewrote stood for. `prev` is the old
    inode kept (as a hidden link) after a replace, with the size read: an O_APPEND writer that
    opened it before the replace may still add to it, and the next pass takes that in.
    """

    root = models.CharField(max_length=1024, help_text="The synced agents folder (absolute).")
    folder = models.CharField(max_length=1024, help_text="The memory folder, relative to the root.")
    memory = models.ForeignKey("memory.Memory", on_delete=models.CASCADE, related_name="synced_folders")
    files = models.JSONField(default=dict)
    # The stats alone (a few numbers per file), so deciding a folder is unchanged never loads `files`.
    stats = models.JSONField(default=dict)
    memory_version = models.BigIntegerField(
        default=-1, help_text="The memory's version the files were last written at."
    )
    synced_at = models.DateTimeField(null=True, blank=True)
    error = models.TextField(blank=True, help_text="Why the last pass could not sync this folder.")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["root", "folder"], name="synced_folder_unique_root_folder")]

    def __str__(self):
        return f"{self.root}/{self.folder}"


class SyncConflict(models.Model):
    """A lesson a person changed since the last pass whose line Night Watch also changed.

    Neither side is written over while it waits: the lesson keeps the person's text in the store,
    the file keeps Night Watch's line (none when Night Watch removed it) until a person picks.
    """

    class Status(models.TextChoices):
        PENDING = "pending", "Waiting"
        RESOLVED = "resolved", "Resolved"

    class Choice(models.TextChoices):
        FILE = "file", "Night Watch's text"
        DASHBOARD = "dashboard", "The dashboard's text"
        BOTH = "both", "Keep both"

    memory = models.ForeignKey("memory.Memory", on_delete=models.CASCADE, related_name="sync_conflicts")
    folder = models.ForeignKey(SyncedFolder, on_delete=models.CASCADE, related_name="conflicts")
    lesson = models.ForeignKey("memory.Lesson", on_delete=models.CASCADE, related_name="sync_conflicts")
    file_name = models.CharField(max_length=20)
    base_line = models.TextField(help_text="The line as the files held it after the last pass.")
    file_line = models.TextField(blank=True, help_text="Night Watch's line now; empty when it removed the line.")
    earlier_file_lines = models.JSONField(
        default=list,
        blank=True,
        help_text="Lines Night Watch wrote in this place before its latest one, while the conflict waited.",
    )
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    choice = models.CharField(max_length=10, choices=Choice.choices, blank=True)
    resolved_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    resolved_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["lesson"], condition=models.Q(status="pending"), name="sync_conflict_one_pending_per_lesson"
            ),
        ]

    def __str__(self):
        return f"File conflict #{self.pk} on lesson {self.lesson_id}"
