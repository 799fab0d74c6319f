"""What the file importer remembers about the folders it has read, so an unchanged folder is skipped."""

from django.db import models
from django.utils import timezone

__all__ = ["ImportedFolder"]


class ImportedFolder(models.Model):
    """One memory folder as it was when last imported from one root.

    A folder whose files hash the same and whose memory is still at the version the import left it
    at would add nothing: the importer skips it without parsing. Any change to the memory (a lesson
    edited, deleted, a reverted import) bumps the version, and the folder is compared line by line again.
    """

    root = models.CharField(max_length=1024, help_text="The folder the import was run on (absolute).")
    folder = models.CharField(max_length=1024, help_text="The memory folder, relative to the root.")
    memory = models.ForeignKey("memory.Memory", on_delete=models.CASCADE, related_name="imported_folders")
    digest = models.CharField(max_length=64, help_text="sha256 of the folder's memory files.")
    memory_version = models.PositiveBigIntegerField()
    lines = models.PositiveIntegerField(help_text="Lessons the folder holds (reported as already present).")
    imported_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["root", "folder"], name="imported_folder_unique_root_folder"),
        ]

    def __str__(self):
        return f"{self.root}/{self.folder}"
