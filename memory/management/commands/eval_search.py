"""python manage.py eval_search — relevance of lesson search on the labelled corpus. Writes nothing."""

from django.core.management.base import BaseCommand
from django.db import connection

from memory.search.evaluation import TOP, evaluate


class Command(BaseCommand):
    help = (
        "Search the labelled corpus (memory/search/corpus/lessons.json) and print the share of queries whose "
        f"expected lessons all rank in the top {TOP}, with the misses. Writes nothing."
    )

    def handle(self, *args, **options):
        outcome = evaluate()
        for query, expected, top in outcome.misses:
            self.stdout.write(f"miss: {query!r} expected {expected}, top {TOP}: {top}")
        self.stdout.write(
            f"search relevance ({connection.vendor}): {outcome.hits}/{outcome.queries} queries with the expected "
            f"lessons in the top {TOP} = {outcome.score:.3f} (target 0.900)"
        )
