"""Two-way sync with a Night Watch agents folder (`manage.py sync_memory`, `memory.sync.pass` from beat)."""
