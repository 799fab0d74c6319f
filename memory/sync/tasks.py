"""The beat's sync pass over NIGHT_WATCH_ROOT: thin, one service call."""

from celery import shared_task

__all__ = ["sync_night_watch_root"]

# Passes do not overlap: a pass still running when the next minute comes is left to finish.
LOCK_KEY = "memory.sync.pass-running"
LOCK_SECONDS = 15 * 60


@shared_task(name="memory.sync.pass")
def sync_night_watch_root():
    """One pass over settings.NIGHT_WATCH_ROOT; returns how many folders failed (None: nothing to do)."""
    from django.conf import settings
    from django.core.cache import cache

    from memory.sync.engine import sync_pass

    if not settings.NIGHT_WATCH_ROOT or not cache.add(LOCK_KEY, 1, LOCK_SECONDS):
        return None
    try:
        return len(sync_pass(settings.NIGHT_WATCH_ROOT).failed)
    finally:
        cache.delete(LOCK_KEY)
