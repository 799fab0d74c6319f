"""python manage.py eval_conflicts [CORPUS ...] [--show] [--engine offline|anthropic|openai] — score
conflict and expiry detection on a labelled corpus. Writes nothing."""

from dataclasses import replace

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from memory.conflicts import evaluation
from memory.conflicts.model import Budget
from memory.engines.recorder import CallRecorder
from memory.engines.registry import PROVIDERS, engine_config, engine_for_config

CONFLICT_MEASURES = ("found", "precision", "explicit_recall", "implicit_recall", "false_alarms", "direction")


class Command(BaseCommand):
    help = (
        "Run conflict detection on a labelled corpus (format: memory/conflicts/corpus/labelled.json) and print "
        "precision, explicit and implicit recall, false alarms on compatible look-alikes, direction accuracy and "
        "expiry precision and recall; with a model engine, for the offline detector, the model alone and both "
        "together (what the product stores), with the model's calls and tokens."
    )

    def add_arguments(self, parser):
        parser.add_argument("corpus", nargs="*", default=[str(evaluation.DEFAULT_CORPUS)])
        parser.add_argument("--show", action="store_true", help="list the pairs and expiries scored wrong")
        parser.add_argument(
            "--engine",
            choices=PROVIDERS,
            default="offline",
            help="offline (default, no key): the offline detector; anthropic or openai: also the model pass, "
            "with the key and model of the environment and the CONFLICTS_MODEL_* budget",
        )
        parser.add_argument("--model", default="", help="model name (default: CONFLICTS_MODEL, else the provider's)")

    def handle(self, *args, corpus, show, engine, model: str = "", **options):
        try:
            corpora = [(path, evaluation.load_corpus(path)) for path in corpus]
        except evaluation.CorpusError as exc:
            raise CommandError(str(exc)) from None
        finder, recorder, label = None, None, ""
        if engine != "offline":
            recorder = CallRecorder(persist=False)
            config = replace(engine_config(None), provider=engine, model=model or settings.CONFLICTS_MODEL)
            model_engine = engine_for_config(config, recorder)
            label = f"{engine} ({model_engine.model})"
            finder = evaluation.model_finder(model_engine, Budget.from_settings())
        for path, memories in corpora:
            self.stdout.write(path)
            self._block("offline", evaluation.score(memories), show, expiry=True)
            if finder is None:
                continue
            since = len(recorder.calls)
            # One model pass per memory, scored alone and with the offline findings.
            once = evaluation.given({id(memory): finder(memory) for memory in memories})
            self._block(f"{label} alone", evaluation.score(memories, once, expiry_too=False), show)
            both = evaluation.combined(evaluation.offline_findings, once)
            self._block(f"offline + {label} (stored)", evaluation.score(memories, both, expiry_too=False), show)
            calls, tokens_in, tokens_out = recorder.totals(since)
            self.stdout.write(f"  model calls: {calls}, tokens in: {tokens_in}, tokens out: {tokens_out}")
            for error in finder.errors:
                self.stdout.write(f"  model error: {error}")
            finder.errors.clear()

    def _block(self, title, scores, show, expiry=False):
        self.stdout.write(f" engine: {title}")
        for name, value in scores.as_dict().items():
            if not expiry and name not in CONFLICT_MEASURES:
                continue
            self.stdout.write(f"  {name:<22} {value:.2f}" if isinstance(value, float) else f"  {name:<22} {value}")
        if show:
            for line in scores.wrong:
                self.stdout.write(f"  wrong: {line}")
