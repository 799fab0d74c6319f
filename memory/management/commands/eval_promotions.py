"""python manage.py eval_promotions [CORPUS ...] [--engine offline|anthropic|openai] — score promotion
detection on labelled corpora."""

from dataclasses import replace

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from memory.engines.recorder import CallRecorder
from memory.engines.registry import PROVIDERS, engine_config, engine_for_config
from memory.promotions import evaluation, proposals, verification


def _row(label, scores, calls=0, tokens=0):
    s = scores.as_dict()
    return (
        f"{label:<28} {s['candidates']:>10} {s['candidate_precision']:>10.2f} {s['theme_recall']:>8.2f} "
        f"{s['pair_precision']:>9.2f} {s['pair_recall']:>8.2f} {calls:>6} {tokens:>9}"
    )


def _cost(results):
    return sum(r.calls for r in results), sum(r.tokens_in + r.tokens_out for r in results)


class Command(BaseCommand):
    help = (
        "Run promotion detection on a labelled corpus (JSON, format in the README) and print candidates, "
        "candidate precision, theme recall, pair precision, pair recall, model calls and tokens. Writes nothing."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "corpus",
            nargs="*",
            default=[str(p) for p in evaluation.SHIPPED_CORPORA],
            help="corpus files (default: the three labelled corpora shipped with the tests: "
            "two of lessons for detection, one of pipeline observations for the reflector)",
        )
        parser.add_argument("--show", action="store_true", help="list each memory's candidates")
        parser.add_argument(
            "--engine",
            choices=PROVIDERS,
            default="offline",
            help="offline (default, no key): the word rule alone; anthropic or openai: the word "
            "rule, the model's grouping and its check, with the key and model of the environment",
        )
        parser.add_argument("--model", default="", help="model name (default: the provider's default model)")
        parser.add_argument(
            "--token-budget",
            type=int,
            default=None,
            help="stop a memory's run that would use more model tokens than this",
        )

    def handle(self, *args, corpus, show, engine, model, token_budget, **options):
        try:
            corpora = [(path, evaluation.load_corpus(path)) for path in corpus]
        except evaluation.CorpusError as exc:
            raise CommandError(str(exc)) from None
        detect, recorder, label = None, None, "offline"
        if engine != "offline":
            recorder = CallRecorder(persist=False)
            model_engine = engine_for_config(replace(engine_config(None), provider=engine, model=model), recorder)
            label = f"{engine} ({model_engine.model})"
            detect = evaluation.model_detector(
                model_engine,
                batch_tokens=settings.PROMOTION_PROPOSAL_BATCH_TOKENS,
                max_output_tokens=settings.PROMOTION_PROPOSAL_MAX_OUTPUT_TOKENS,
                token_budget=token_budget,
            )
        for path, memories in corpora:
            self._report(path, memories, show, engine, label, detect, recorder)

    def _report(self, corpus, memories, show, engine, label, detect, recorder):
        calls_before = len(recorder.calls) if recorder is not None else 0
        try:
            results = evaluation.evaluate(memories, detect=detect, recorder=recorder)
        except (proposals.ProposalError, verification.VerificationError) as exc:
            raise CommandError(f"The {engine} engine could not be used: {exc}") from None
        out = self.stdout
        out.write(f"corpus: {corpus}")
        if memories and all(m.proposed_by == evaluation.REFLECTOR for m in memories):
            # Scored as the pipeline proposes: the offline reflector's grouping, without the dates rule.
            label = "offline reflector (detection's grouping, no dates rule)"
        out.write(f"engine: {label}")
        out.write(
            f"{'memory':<28} {'candidates':>10} {'cand.prec':>10} {'recall':>8} {'pair.prec':>9} {'pair.rec':>8} "
            f"{'calls':>6} {'tokens':>9}"
        )
        for result in results:
            name = result.memory.name + (" (held out)" if result.memory.holdout else "")
            out.write(_row(name[:28], result.scores, result.calls, result.tokens_in + result.tokens_out))
            if show:
                for keys in result.groups:
                    out.write(f"    {', '.join(keys)}")
        tuned = [r for r in results if not r.memory.holdout]
        held = [r for r in results if r.memory.holdout]
        if tuned and held:
            out.write(_row("tuned memories", evaluation.total(tuned), *_cost(tuned)))
            out.write(_row("held-out memories", evaluation.total(held), *_cost(held)))
        out.write(_row("all", evaluation.total(results), *_cost(results)))
        if recorder is not None:
            calls, tokens_in, tokens_out = recorder.totals(calls_before)
            out.write(f"model calls: {calls}, tokens in: {tokens_in}, tokens out: {tokens_out}")
