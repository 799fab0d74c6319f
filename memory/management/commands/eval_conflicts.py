"""python manage.py eval_conflicts [CORPUS ...] [--show] — score conflict and expiry detection on a
labelled corpus. Writes nothing."""

from django.core.management.base import BaseCommand, CommandError

from memory.conflicts import evaluation


class Command(BaseCommand):
    help = (
        "Run the offline conflict detector on a labelled corpus (format: memory/conflicts/corpus/labelled.json) "
        "and print precision, explicit and implicit recall, false alarms on compatible look-alikes, direction "
        "accuracy and expiry precision and recall."
    )

    def add_arguments(self, parser):
        parser.add_argument("corpus", nargs="*", default=[str(evaluation.DEFAULT_CORPUS)])
        parser.add_argument("--show", action="store_true", help="list the pairs and expiries scored wrong")

    def handle(self, *args, corpus, show, **options):
        for path in corpus:
            try:
                memories = evaluation.load_corpus(path)
            except evaluation.CorpusError as exc:
                raise CommandError(str(exc)) from None
            scores = evaluation.score(memories)
            self.stdout.write(path)
            for name, value in scores.as_dict().items():
                self.stdout.write(f"  {name:<22} {value:.2f}" if isinstance(value, float) else f"  {name:<22} {value}")
            if show:
                for line in scores.wrong:
                    self.stdout.write(f"  wrong: {line}")
