"""`sync_memory --watch`: a pass whenever Night Watch's files change, and every few seconds anyway."""

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
    """Run passes over root until stop.is_set(): one now, then one per burst of file changes or idle period."""
    after_pass(sync_pass(root))
    for _ in watch(root, debounce=DEBOUNCE_MS, step=50, rust_timeout=int(idle_seconds * 1000),
                   yield_on_timeout=True, stop_event=stop, watch_filter=_memory_files, raise_interrupt=False):
        if stop.is_set():
            return
        after_pass(sync_pass(root))
