"""python manage.py eval_search — relevance of lesson search on the labelled corpus. Writes nothing."""

from django.core.management.base import BaseCommand
from django.db import connection

from memory.search.evaluation import HELDOUT_QUESTIONS, LEAD_QUESTIONS, TOP, evaluate


class Command(BaseCommand):
    help = (
        "Search the labelled corpus (memory/search/corpus/) and print, for each set of queries and each way of "
        f"searching, the share of queries whose expected lessons all rank in the top {TOP}, with the misses. "
        "Writes nothing."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--among-everything",
            action="store_true",
            help="search the page's way across every lesson of the database (not only the corpus's project), so the "
            "corpus's lessons compete with a large store's; the agents' way is left out (it searches one memory)",
        )

    def handle(self, *args, among_everything, **options):
        sets = (("corpus queries", None), ("lead questions", LEAD_QUESTIONS), ("held-out questions", HELDOUT_QUESTIONS))
        for label, queries in sets:
            for via in ("web",) if among_everything else ("web", "agents"):
                outcome = evaluate(queries=queries, via=via, among_everything=among_everything)
                for query, expected, top in outcome.misses:
                    self.stdout.write(f"  miss ({label}, {via}): {query!r} expected {expected}, top {TOP}: {top}")
                self.stdout.write(
                    f"search relevance ({connection.vendor}, {label}, {via}{', among every lesson' if among_everything else ''}):"
                    f" {outcome.hits}/{outcome.queries} "
                    f"queries with the expected lessons in the top {TOP} = {outcome.score:.3f} (target 0.900)"
                )
