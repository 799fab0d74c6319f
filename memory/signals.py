"""Hooks between the history core and the feature slices, so neither imports the other's internals.

Every signal of the product is declared here; each slice connects its receivers in its own
receivers.py, imported by MemoryConfig.ready (memory/apps.py).
"""

import django.dispatch

# Sent after the transaction that wrote the lessons has committed. kwargs: memory_id, lesson_ids
working_lessons_added = django.dispatch.Signal()

# Sent after a batch has been reverted, so features that own state outside lessons (promotion
# candidates, compaction proposals, refinement runs) can follow. kwargs: batch, revert_batch
batch_reverted = django.dispatch.Signal()

# Sent inside the write, before a lesson's refs are stored: receivers may set fields of the unsaved
# LessonRef rows (the refs slice points each at its anchor). kwargs: lesson, rows, new (the lesson
# was just created, so it has no earlier refs).
lesson_refs_writing = django.dispatch.Signal()

# Sent inside the transaction of a change a team should hear about (something new waits for review,
# an item was decided, a folder failed to sync), so the event is stored with the change or not at
# all. kwargs: event_type, memory_id (or None), team_id (or None), data (ids, names, links: never
# lesson text), lesson_texts ({item id: text}, sent only to endpoints that ask for it).
review_event = django.dispatch.Signal()
