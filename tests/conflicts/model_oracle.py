"""A scripted model for the fake LLM server that knows the corpus labels.

It reads the lessons a `report_conflicts` request lists (by their text), and answers every labelled
conflict (supersedes or contradicts, explicit or implicit) whose two lessons were both sent and one
of them was to check, with the labelled older lesson first. It measures the pipeline around the
model (batching, budget, validation, direction, storage), not a model's judgement.
"""

import re
from collections import Counter

from memory.conflicts import evaluation
from tests.promotions.model_oracle import request_parts

LESSON_LINE = re.compile(r"^- (\d+) \| ")
CHECK_HEADING = "Lessons to check ("


def _norm(text):
    return " ".join(text.split())


def sent_lessons(prompt):
    """({id: text} of every lesson listed, {ids under "Lessons to check"})."""
    texts, check, inside = {}, set(), False
    for line in prompt.splitlines():
        if line.endswith("(id | date | tier | category | refs | lesson):"):
            inside = line.startswith(CHECK_HEADING)
        elif m := LESSON_LINE.match(line):
            texts[int(m.group(1))] = line.split(" | ", 5)[5]
            if inside:
                check.add(int(m.group(1)))
    return texts, check


def labelled_conflicts(path=evaluation.DEFAULT_CORPUS):
    """{frozenset of the two texts: (older text, newer text, relation, kind)} of the corpus's conflicts."""
    labels = {}
    for memory in evaluation.load_corpus(path):
        text = {lesson.id: _norm(lesson.text) for lesson in memory.lessons}
        for a, b, label, kind in memory.pairs:
            if label != "compatible":
                labels[frozenset((text[a], text[b]))] = (text[a], text[b], label, kind)
    return labels


class ConflictOracle:
    def __init__(self, labels=None):
        self.labels = labelled_conflicts() if labels is None else labels
        self.asked = Counter()
        self.answered = []  # every pair sent back, as (older id, newer id, relation)

    def __call__(self, request):
        prompt, tool = request_parts(request)
        self.asked[tool or "text"] += 1
        if tool != "report_conflicts":
            return "No tool was offered."
        texts, check = sent_lessons(prompt)
        ids = {_norm(text): i for i, text in texts.items()}
        pairs = []
        for older, newer, relation, kind in self.labels.values():
            a, b = ids.get(older), ids.get(newer)
            if a is None or b is None or not ({a, b} & check):
                continue
            pairs.append({"older": a, "newer": b, "relation": relation, "reason": f"Labelled {relation} ({kind})."})
            self.answered.append((a, b, relation))
        return [("report_conflicts", {"conflicts": pairs})]
