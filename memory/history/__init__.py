"""The one write path of lessons, their refs and their history (Lesson, LessonRef, Change rows).

No other module creates or updates those rows (tests/test_one_write_path.py checks it); other code
calls the names memory/services.py lists. Each reason to change has its own module:
- snapshots.py: the table of a lesson's columns, and the snapshot history records and revert restores;
- validation.py: what a lesson's fields and refs may hold;
- batches.py: who writes (Actor), change batches, the memory's version and its caches;
- lessons.py: writes of one lesson at a time (create, edit, retire, confirm, append);
- bulk.py and rows.py: many lessons or refs in a few statements (imports, compaction, ref checks);
- revert.py: undoing a change or a batch.
The core imports no feature slice: features follow it through memory/signals.py.
"""
