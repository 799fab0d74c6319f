from datetime import date

import pytest

from memory.promotions.services import promotion_detect
from tests.factories import make_lesson

THEME = [
    ("Webhook handlers must verify the Stripe signature before parsing the payload", "src/billing/webhooks.py#L10-L30"),
    ("Verify the Stripe webhook signature first; parsing the payload before verification accepted forged events",
     "src/billing/webhooks.py#L12"),
    ("Stripe webhook payload parsing happens only after signature verification", "src/billing/webhooks.py"),
]


@pytest.fixture
def themed(memory):
    """themed(n) creates the first n lessons of one theme, each on its own date."""

    def make(n=3, start=1):
        return [
            make_lesson(memory, text, refs=ref, day=date(2026, 1, start + i))
            for i, (text, ref) in enumerate(THEME[:n])
        ]

    return make


@pytest.fixture
def candidate(memory, themed):
    themed(3)
    result = promotion_detect(memory=memory)
    assert len(result.created) == 1
    return result.created[0]


def verdict(lessons, keep=None, *, core=True, reason="They state the same lesson."):
    """A verify_group answer keeping `keep` (default: every lesson)."""
    keep = lessons if keep is None else keep
    return ("verify_group", {"same_lesson": [l.pk for l in keep], "deserves_core": core, "reason": reason})


def grouping(*groups):
    """A propose_groups answer: each group a dict of ids (or lessons), existing key, summary and reason."""
    answer = []
    for group in groups:
        entry = dict(group)
        entry["ids"] = [getattr(i, "pk", i) for i in entry["ids"]]
        entry.setdefault("reason", "They state the same lesson.")
        if "existing" not in entry:
            entry.setdefault("summary", "The same lesson.")
        answer.append(entry)
    return ("propose_groups", {"groups": answer})
