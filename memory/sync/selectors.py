"""Reads of sync state for pages."""

from memory.sync.models import SyncConflict, SyncedFolder


def folder_sync_state(memory):
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
