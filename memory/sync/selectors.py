"""Reads of sync state for pages."""

from datetime import datetime
from typing import TypedDict

from memory.models import Memory
from memory.sync.models import SyncConflict, SyncedFolder


class FolderSyncState(TypedDict):
    synced_at: datetime | None  # the latest pass that synced one of the memory's folders
    error: str  # why a folder could not be synced, "" when none failed
    conflicts: int  # file conflicts waiting for a person


def folder_sync_state(memory: Memory) -> FolderSyncState | None:
    """{"synced_at", "error", "conflicts"} of the memory's synced folders, or None when none is synced.

    One query for a memory no folder syncs; two otherwise.
    """
    folders = list(SyncedFolder.objects.filter(memory=memory).values_list("synced_at", "error"))
    if not folders:
        return None
    times = [at for at, _ in folders if at]
    return {
        "synced_at": max(times) if times else None,
        "error": next((error for _, error in folders if error), ""),
        "conflicts": SyncConflict.objects.filter(memory=memory, status=SyncConflict.Status.PENDING).count(),
    }
