"""Score conflict and expiry detection against a labelled corpus (`manage.py eval_conflicts`).

A corpus is JSON (memory/conflicts/corpus/labelled.json shows the format): memories of dated,
tiered lessons, labelled pairs (supersedes with the older first, contradicts, or compatible look-alikes
that share many words but both hold), the lessons that name an expiry, and the conditions temporary
lessons carry (expires_when) with the later lessons that report them met. Nothing is written to the
database: the lessons are scored in memory through the detector the product runs, and with a model
engine through the model pass the product runs (model.find, every lesson compared, as a full pass).

Measures, summed over the memories:
- precision: pairs found that are labelled conflicts / pairs found (an unlabelled pair counts as wrong);
- explicit recall and implicit recall: labelled conflicts of each kind found / labelled of that kind;
- false alarms: compatible look-alikes found / compatible look-alikes;
- direction: conflicts found with the labelled relation and, for supersedes, the labelled newer lesson;
- expiry precision and recall: lessons proposed an expiry that are labelled with one;
- condition precision, recall and false alarms: pairs (temporary lesson, later lesson) found
  saying the condition happened that are labelled so (kind `condition`) / found, / labelled, and
  look-alikes naming a temporary lesson's condition without meeting it that were found / labelled.
  Condition pairs are scored here only, not in the detector's explicit recall.
"""

import json
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from types import SimpleNamespace

from memory.conflicts import detection, expiry, model

DEFAULT_CORPUS = Path(__file__).resolve().parent / "corpus" / "labelled.json"


class CorpusError(ValueError):
    """The corpus file cannot be read; the message says where."""


@dataclass
class Scores:
    found: int = 0
    correct: int = 0
    explicit: int = 0
    explicit_found: int = 0
    implicit: int = 0
    implicit_found: int = 0
    hard: int = 0
    hard_found: int = 0
    directed_right: int = 0
    expiry_found: int = 0
    expiry_correct: int = 0
    expiry_labelled: int = 0
    condition: int = 0
    condition_found: int = 0
    condition_correct: int = 0
    condition_hard: int = 0
    condition_hard_found: int = 0
    wrong: list = field(default_factory=list)

    @staticmethod
    def _ratio(a, b, empty=1.0):
        return a / b if b else empty

    def as_dict(self):
        return {
            "found": self.found,
            "precision": self._ratio(self.correct, self.found),
            "explicit_recall": self._ratio(self.explicit_found, self.explicit),
            "implicit_recall": self._ratio(self.implicit_found, self.implicit),
            "false_alarms": self._ratio(self.hard_found, self.hard, 0.0),
            "direction": self._ratio(self.directed_right, self.correct),
            "expiry_precision": self._ratio(self.expiry_correct, self.expiry_found),
            "expiry_recall": self._ratio(self.expiry_correct, self.expiry_labelled),
            "condition_found": self.condition_found,
            "condition_precision": self._ratio(self.condition_correct, self.condition_found),
            "condition_recall": self._ratio(self.condition_correct, self.condition),
            "condition_false_alarms": self._ratio(self.condition_hard_found, self.condition_hard, 0.0),
        }


def load_corpus(path):
    try:
        data = json.loads(Path(path).read_text())
        memories = []
        for memory in data["memories"]:
            lessons, keys = [], {}
            conditions = memory.get("expires_when", {})
            for i, (key, day, tier, text) in enumerate(memory["lessons"], start=1):
                keys[key] = i
                lessons.append(
                    SimpleNamespace(
                        id=i,
                        key=key,
                        lesson_date=date.fromisoformat(day),
                        tier=tier,
                        text=text,
                        expires_when=conditions.get(key, ""),
                    )
                )
            unknown = set(conditions) - set(keys)
            if unknown:
                raise KeyError(f"expires_when names no lesson: {sorted(unknown)}")
            pairs = [(keys[a], keys[b], label, kind) for a, b, label, kind in memory.get("pairs", [])]
            expiries = {keys[k] for k in memory.get("expiry", {})}
            memories.append(SimpleNamespace(name=memory["name"], lessons=lessons, pairs=pairs, expiries=expiries))
        return memories
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise CorpusError(f"{path}: {exc!r}") from None


def offline_findings(memory):
    return detection.detect(memory.lessons)


def model_finder(engine, budget):
    """A `find` for score() that asks the model about every lesson of a memory (a full pass, batched
    and budgeted as in the product). Calls that fail or cannot be read are listed in `errors`."""
    errors = []

    def find(memory):
        outcome = model.find(engine, memory.lessons, [lesson.id for lesson in memory.lessons], budget)
        errors.extend(f"{memory.name}: {e}" for e in outcome.errors)
        if outcome.postponed:
            errors.append(f"{memory.name}: {len(outcome.postponed)} lessons not compared (budget)")
        return outcome.findings

    find.errors = errors
    return find


def given(findings_by_memory):
    """A `find` for score() that returns findings already made ({id(memory): [finding]})."""
    return lambda memory: findings_by_memory[id(memory)]


def combined(*finders):
    """What the product stores: each pair once, as the first engine found it (offline first)."""

    def find(memory):
        seen, found = set(), []
        for finder in finders:
            for finding in finder(memory):
                pair = frozenset((finding.older_id, finding.newer_id))
                if pair not in seen:
                    seen.add(pair)
                    found.append(finding)
        return found

    return find


def score(memories, find=offline_findings, *, expiry_too=True):
    """Scores of the pairs `find(memory)` returns (default: the offline detector)."""
    scores = Scores()
    for memory in memories:
        labels = {frozenset((a, b)): (a, b, label, kind) for a, b, label, kind in memory.pairs}
        temporary = {lesson.id for lesson in memory.lessons if lesson.expires_when}
        for a, b, label, kind in labels.values():
            if label == "compatible":
                scores.hard += 1
                scores.condition_hard += bool({a, b} & temporary)
            elif kind == "condition":
                scores.condition += 1
            elif kind == "implicit":
                scores.implicit += 1
            else:
                scores.explicit += 1
        keys = {lesson.id: lesson.key for lesson in memory.lessons}
        for finding in find(memory):
            scores.found += 1
            _a, b, label, kind = labels.get(frozenset((finding.older_id, finding.newer_id)), (0, 0, None, None))
            if label in (None, "compatible"):
                scores.hard_found += label == "compatible"
                scores.wrong.append(
                    f"{memory.name}: {keys[finding.older_id]} / {keys[finding.newer_id]} ({finding.evidence})"
                )
                continue
            scores.correct += 1
            if kind == "implicit":
                scores.implicit_found += 1
            elif kind != "condition":
                scores.explicit_found += 1
            if finding.relation == label and (label != "supersedes" or finding.newer_id == b):
                scores.directed_right += 1
            else:
                scores.wrong.append(f"{memory.name}: direction {keys[finding.older_id]} -> {keys[finding.newer_id]}")
        if not expiry_too:
            continue
        for found in expiry.conditions_met(
            memory.lessons, [lesson for lesson in memory.lessons if lesson.expires_when]
        ):
            scores.condition_found += 1
            _a, b, label, kind = labels.get(frozenset((found.older_id, found.newer_id)), (0, 0, None, None))
            if kind == "condition" and b == found.newer_id:
                scores.condition_correct += 1
                continue
            scores.condition_hard_found += label == "compatible"
            scores.wrong.append(f"{memory.name}: condition {keys[found.older_id]} / {keys[found.newer_id]}")
        scores.expiry_labelled += len(memory.expiries)
        for found in expiry.detect_expiry(memory.lessons):
            scores.expiry_found += 1
            if found.lesson_id in memory.expiries:
                scores.expiry_correct += 1
            else:
                scores.wrong.append(f"{memory.name}: expiry {keys[found.lesson_id]} ({found.evidence})")
    return scores
