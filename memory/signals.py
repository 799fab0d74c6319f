"""Hooks between features, so reflection need not know who reacts to new lessons.

Sent after the transaction that wrote the lessons has committed.
"""

import django.dispatch

# kwargs: memory_id, lesson_ids
working_lessons_added = django.dispatch.Signal()
