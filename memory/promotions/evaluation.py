"""Score promotion detection against a labelled corpus (`manage.py eval_promotions`, `make bench`).

A corpus is JSON (format in the README): memories, each with lessons labelled by theme. Lessons
sharing a theme state the same lesson; a theme whose lessons span at least the memory's threshold
of distinct dates is a recurring lesson that should become exactly one candidate.

Measures, summed over the memories scored:
- candidate precision: candidates that are one true recurring lesson (every member has the same
  theme and the members' own dates reach the threshold) / candidates;
- theme recall: recurring themes with such a candidate / recurring themes;
- pair precision: member pairs inside candidates that share a theme / member pairs inside candidates;
- pair recall: pairs of a recurring theme's lessons found together in a candidate / all such pairs.

Nothing is written to the database: the lessons are scored in memory through the same detection
the product runs. With a model engine (model_detector) that is the word rule, the model's grouping
of every lesson (batched as in the product, starting from no placed lesson) merged with it, and
the model's check of each group; the engine's calls are counted, not logged.
"""

import json
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import date
from itertools import combinations
from pathlib import Path
from types import SimpleNamespace

from django.core.exceptions import ValidationError

from memory.promotions import detection, proposals
from memory.refs import parse_ref_list

CORPUS_DIR = Path(__file__).resolve().parents[2] / "tests" / "promotions" / "corpus"
# Restatements that keep naming their subject, with look-alike decoys: what the word rule is for.
DEFAULT_CORPUS = CORPUS_DIR / "restatements.json"
# Restatements that share almost no words: what only a model engine can join.
PARAPHRASE_CORPUS = CORPUS_DIR / "paraphrases.json"
# Observations as the pipeline's observer records them, scored through the reflector's grouping.
OBSERVATION_CORPUS = CORPUS_DIR / "observations.json"
SHIPPED_CORPORA = (DEFAULT_CORPUS, PARAPHRASE_CORPUS, OBSERVATION_CORPUS)
REFLECTOR = "reflector"


class CorpusError(ValueError):
    """The corpus file cannot be read; the message says where."""


@dataclass
class CorpusLesson:
    id: int
    key: str
    text: str
    day: date
    category: str
    refs: list
    theme: str | None
    confirmed_on: list = field(default_factory=list)


@dataclass
class CorpusMemory:
    name: str
    threshold: int
    holdout: bool
    lessons: list
    # "reflector": pipeline observations, grouped by the reflector and scored without the dates rule
    # (a theme of two or more observations is one reflection to find).
    proposed_by: str = "detection"


@dataclass
class Scores:
    candidates: int = 0
    true_candidates: int = 0
    themes: int = 0
    themes_found: int = 0
    pairs_proposed: int = 0
    pairs_proposed_true: int = 0
    pairs_expected: int = 0
    pairs_expected_found: int = 0

    def __add__(self, other):
        return Scores(**{k: getattr(self, k) + getattr(other, k) for k in self.__dataclass_fields__})

    @staticmethod
    def _ratio(num, den):
        return num / den if den else 1.0

    @property
    def candidate_precision(self):
        return self._ratio(self.true_candidates, self.candidates)

    @property
    def theme_recall(self):
        return self._ratio(self.themes_found, self.themes)

    @property
    def pair_precision(self):
        return self._ratio(self.pairs_proposed_true, self.pairs_proposed)

    @property
    def pair_recall(self):
        return self._ratio(self.pairs_expected_found, self.pairs_expected)

    def as_dict(self):
        return {
            "candidates": self.candidates,
            "candidate_precision": round(self.candidate_precision, 3),
            "theme_recall": round(self.theme_recall, 3),
            "pair_precision": round(self.pair_precision, 3),
            "pair_recall": round(self.pair_recall, 3),
        }


def _fail(where, message):
    raise CorpusError(f"{where}: {message}")


def _day(value, where):
    try:
        return date.fromisoformat(str(value))
    except ValueError:
        _fail(where, f"{value!r} is not a date like 2026-01-31")


def load_corpus(path):
    """Read and check a corpus file; CorpusError says what is wrong and where."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise CorpusError(f"{path}: cannot be read ({exc.strerror})") from None
    except ValueError as exc:
        raise CorpusError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("memories"), list) or not data["memories"]:
        _fail(path, 'expected an object with a non-empty "memories" list')
    proposed_by = data.get("proposed_by", "detection")
    if proposed_by not in ("detection", REFLECTOR):
        _fail(path, f'"proposed_by" must be "detection" or "reflector", got {proposed_by!r}')
    memories, next_id = [], 1
    for m, raw in enumerate(data["memories"]):
        where = f"{path}: memories[{m}]"
        if not isinstance(raw, dict) or not isinstance(raw.get("lessons"), list):
            _fail(where, 'expected an object with a "lessons" list')
        threshold = raw.get("threshold", 3)
        if not isinstance(threshold, int) or threshold < 2:
            _fail(where, "threshold must be a whole number of at least 2")
        lessons, keys = [], set()
        for n, item in enumerate(raw["lessons"]):
            spot = f"{where}.lessons[{n}]"
            if not isinstance(item, dict) or not str(item.get("text") or "").strip():
                _fail(spot, 'expected an object with a non-empty "text"')
            key = str(item.get("id") or f"{m}-{n}")
            if key in keys:
                _fail(spot, f"the id {key!r} is used twice")
            keys.add(key)
            try:
                refs = parse_ref_list(item.get("refs") or "")
            except ValidationError as exc:
                _fail(spot, "; ".join(exc.messages))
            theme = item.get("theme")
            lessons.append(
                CorpusLesson(
                    id=next_id,
                    key=key,
                    text=item["text"].strip(),
                    day=_day(item.get("date"), spot),
                    category=str(item.get("category") or "OBSERVATION").upper(),
                    refs=refs,
                    theme=str(theme) if theme not in (None, "") else None,
                    confirmed_on=[_day(d, spot) for d in item.get("confirmed_on") or []],
                )
            )
            next_id += 1
        memories.append(
            CorpusMemory(
                name=str(raw.get("name") or f"memory {m + 1}"),
                threshold=threshold,
                holdout=bool(raw.get("holdout")),
                lessons=lessons,
                proposed_by=proposed_by,
            )
        )
    return memories


def facts_for(memory):
    rows = [(lesson.id, lesson.text, lesson.key, lesson.day) for lesson in memory.lessons]
    paths = {lesson.id: [r.path for r in lesson.refs] for lesson in memory.lessons}
    confirmations = {lesson.id: [(None, d) for d in lesson.confirmed_on] for lesson in memory.lessons}
    facts = detection.facts_from_rows(rows, paths, confirmations)
    for item in facts:
        item.confirmation_ids = ()
    return facts


def score(memory, groups):
    """Scores of the candidate groups (lists of corpus lesson ids) found in one memory."""
    by_id = {lesson.id: lesson for lesson in memory.lessons}
    theme_dates = defaultdict(set)
    theme_members = defaultdict(list)
    for lesson in memory.lessons:
        if lesson.theme:
            theme_dates[lesson.theme] |= {lesson.day, *lesson.confirmed_on}
            theme_members[lesson.theme].append(lesson.id)
    if memory.proposed_by == REFLECTOR:
        # A reflection is a pattern backed by two or more observations, whatever their dates.
        recurring = {t for t, members in theme_members.items() if len(members) >= 2}
    else:
        recurring = {t for t, days in theme_dates.items() if len(days) >= memory.threshold}
    result = Scores(candidates=len(groups), themes=len(recurring))
    found, together = set(), set()
    for ids in groups:
        themes = {by_id[i].theme for i in ids}
        days = set().union(*({by_id[i].day, *by_id[i].confirmed_on} for i in ids))
        theme = next(iter(themes))
        enough = len(ids) >= 2 if memory.proposed_by == REFLECTOR else len(days) >= memory.threshold
        if len(themes) == 1 and theme in recurring and enough:
            result.true_candidates += 1
            found.add(theme)
        for a, b in combinations(sorted(ids), 2):
            result.pairs_proposed += 1
            if by_id[a].theme is not None and by_id[a].theme == by_id[b].theme:
                result.pairs_proposed_true += 1
            together.add((a, b))
    result.themes_found = len(found)
    for theme in recurring:
        for pair in combinations(sorted(theme_members[theme]), 2):
            result.pairs_expected += 1
            result.pairs_expected_found += pair in together
    return result


@dataclass
class MemoryResult:
    memory: CorpusMemory
    scores: Scores
    groups: list  # of [corpus lesson keys]
    calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0


def evaluate(memories, *, detect=None, recorder=None):
    """Run detection on each memory; `detect(memory, facts)` returns groups (default: the offline rule).

    With the engine's `recorder`, each result counts the model calls and tokens its memory took.
    """
    detect = detect or (lambda memory, facts: detection.detect(facts, min_dates=memory.threshold))
    results = []
    for memory in memories:
        since = len(recorder.calls) if recorder is not None else 0
        if memory.proposed_by == REFLECTOR:
            groups = reflector_groups(facts_for(memory))
        else:
            groups = [g.lesson_ids for g in detect(memory, facts_for(memory))]
        keys = {lesson.id: lesson.key for lesson in memory.lessons}
        calls, tokens_in, tokens_out = recorder.totals(since) if recorder is not None else (0, 0, 0)
        results.append(
            MemoryResult(
                memory=memory,
                scores=score(memory, groups),
                groups=[[keys[i] for i in ids] for ids in groups],
                calls=calls,
                tokens_in=tokens_in,
                tokens_out=tokens_out,
            )
        )
    return results


def reflector_groups(facts):
    """The groups the offline reflector proposes from these observations (memory.pipeline.offline):
    detection's similarity, cap, no chaining and look-alike trim, without the dates rule."""
    from memory.promotions.reflections import ObservationGroups

    return ObservationGroups(facts).groups()


def model_detector(engine, *, batch_tokens, max_output_tokens, token_budget=None):
    """A `detect` for evaluate() that runs the whole detection with a model engine.

    Raises proposals.ProposalError (OverBudget included) or verification.VerificationError when the
    model's answers cannot be used.
    """

    def detect(memory, facts):
        facts_by_id = {f.id: f for f in facts}
        budget = proposals.Budget(token_budget, engine.recorder)
        placements = proposals.Placements()
        items = [proposals.Item(id=lesson.id, day=lesson.day, text=lesson.text) for lesson in memory.lessons]
        proposals.place(
            engine, items, placements, batch_tokens=batch_tokens, max_output_tokens=max_output_tokens, budget=budget
        )
        words = detection.detect(facts, min_dates=memory.threshold)
        merged = proposals.merge(words, placements.groups, facts_by_id, min_dates=memory.threshold)
        lessons = {lesson.id: SimpleNamespace(text=lesson.text, lesson_date=lesson.day) for lesson in memory.lessons}
        budget.check(
            proposals.estimate_checks(merged, {lesson.id: lesson.text for lesson in memory.lessons}),
            f"checking {len(merged)} groups",
        )
        checked = proposals.verify(
            merged, engine=engine, lessons=lessons, facts_by_id=facts_by_id, min_dates=memory.threshold
        )
        return [item.group for item, _ in checked]

    return detect


def total(results):
    return sum((r.scores for r in results), Scores())
