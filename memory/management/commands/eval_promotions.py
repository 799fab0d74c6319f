"""python manage.py eval_promotions [CORPUS ...] — score promotion detection on a labelled corpus."""

from django.core.management.base import BaseCommand, CommandError

from memory.promotions import evaluation


def _row(label, scores):
    s = scores.as_dict()
    return (f"{label:<28} {s['candidates']:>10} {s['candidate_precision']:>10.2f} {s['theme_recall']:>8.2f} "
            f"{s['pair_precision']:>9.2f} {s['pair_recall']:>8.2f}")


class Command(BaseCommand):
    help = ("Run promotion detection on a labelled corpus (JSON, format in the README) and print candidates, "
            "candidate precision, theme recall, pair precision and pair recall. Writes nothing.")

    def add_arguments(self, parser):
        parser.add_argument("corpus", nargs="*", default=[str(p) for p in evaluation.SHIPPED_CORPORA],
                            help="corpus files (default: the two labelled corpora shipped with the tests)")
        parser.add_argument("--show", action="store_true", help="list each memory's candidates")

    def handle(self, *args, corpus, show, **options):
        try:
            corpora = [(path, evaluation.load_corpus(path)) for path in corpus]
        except evaluation.CorpusError as exc:
            raise CommandError(str(exc)) from None
        for path, memories in corpora:
            self._report(path, memories, show)

    def _report(self, corpus, memories, show):
        results = evaluation.evaluate(memories)
        out = self.stdout
        out.write(f"corpus: {corpus}")
        out.write(f"{'memory':<28} {'candidates':>10} {'cand.prec':>10} {'recall':>8} {'pair.prec':>9} {'pair.rec':>8}")
        for result in results:
            label = result.memory.name + (" (held out)" if result.memory.holdout else "")
            out.write(_row(label[:28], result.scores))
            if show:
                for keys in result.groups:
                    out.write(f"    {', '.join(keys)}")
        tuned = [r for r in results if not r.memory.holdout]
        held = [r for r in results if r.memory.holdout]
        if tuned and held:
            out.write(_row("tuned memories", evaluation.total(tuned)))
            out.write(_row("held-out memories", evaluation.total(held)))
        out.write(_row("all", evaluation.total(results)))
