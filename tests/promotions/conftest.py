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
