"""`sync_memory --watch`: a pass whenever Night Watch's files change, and every few seconds anyway."""

import threading

from watchfiles import watch

from memory.sync.engine import sync_pass

# A pass starts once changes have been quiet this long (appendReflection writes one section in one
# write, so this is about the delay from Night Watch's write to the pass)…
DEBOUNCE_MS = 200
# …and at the latest this long after the last one: people's decisions are in the database, not in files.
IDLE_PASS_SECONDS = 5


def _memory_files(change, path):
    name = path.rsplit("/", 1)[-1]
    return name in ("core.md", "working.md", "main.md") or name.endswith(".md.sync-prev")


def watch_passes(root, *, stop, after_pass, idle_seconds=IDLE_PASS_SECONDS):
    """Run passes over root until stop is set: one now, then one per burst of file changes or idle period.

    The watcher runs in its own thread and is started before the first pass, so a write landing
    while a pass runs (or right after it) always brings another pass.
    """
    dirty, started = threading.Event(), threading.Event()

    def watcher():
        started.set()
        for _ in watch(
            root, debounce=DEBOUNCE_MS, step=50, stop_event=stop, watch_filter=_memory_files, raise_interrupt=False
        ):
            dirty.set()
        dirty.set()

    thread = threading.Thread(target=watcher, name="night-watch-files", daemon=True)
    thread.start()
    started.wait()
    try:
        while not stop.is_set():
            dirty.clear()
            after_pass(sync_pass(root))
            dirty.wait(idle_seconds)
    finally:
        stop.set()
        thread.join()
