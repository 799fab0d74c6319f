"""python manage.py rebuild_search_index — fill the lesson search index again from memory_lesson."""

import time

from django.core.management.base import BaseCommand
from django.db import connection, transaction

from memory.search import index


class Command(BaseCommand):
    help = (
        "Refill the lesson search index from the lessons table (SQLite: the FTS5 table and its triggers, "
        "created when missing; PostgreSQL: the GIN index of the generated column is rebuilt)."
    )

    def handle(self, *args, **options):
        started = time.perf_counter()
        with transaction.atomic():
            count = index.rebuild()
        seconds = time.perf_counter() - started
        self.stdout.write(f"search index rebuilt on {connection.vendor}: {count:,} lessons in {seconds:.1f} s")
