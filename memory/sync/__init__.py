"""Two-way sync with a Night Watch agents folder (`manage.py sync_memory`, `sync.pass` from beat)."""
