from datetime import date

import pytest

from memory.promotions.services import promotion_detect
from tests.factories import make_lesson

THEME = [
    ("Webhook handlers must verify the Stripe signature before parsing the payload", "src/billing/webhooks.py#L10-L30"),
    (
        "Verify the Stripe webhook signature first; parsing the payload before verification accepted forged events",
        "src/billing/webhooks.py#L12",
    ),
    ("Stripe webhook payload parsing happens only after signature verification", "src/billing/webhooks.py"),
]


def pending_candidates(n):
    """n pending candidates, each detected in a memory of its own from the theme's lessons."""
    from tests.factories import MemoryFactory

    made = []
    for _ in range(n):
        memory = MemoryFactory()
        for i, (text, ref) in enumerate(THEME):
            make_lesson(memory, text, refs=ref, day=date(2026, 1, 1 + i))
        made.extend(promotion_detect(memory=memory).created)
    return made


@pytest.fixture
def themed(memory):
    """themed(n) creates the first n lessons of one theme, each on its own date."""

    def make(n=3, start=1):
        return [
            make_lesson(memory, text, refs=ref, day=date(2026, 1, start + i)) for i, (text, ref) in enumerate(THEME[:n])
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
    return ("verify_group", {"same_lesson": [lesson.pk for lesson in keep], "deserves_core": core, "reason": reason})


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


RETRY_LESSONS = [
    ("The retry helper sleeps a fixed 2 s between attempts, with no jitter", date(2026, 3, 2)),
    ("After the outage all workers hit the API in lockstep and tripped the rate limit", date(2026, 3, 9)),
    ("Spread retries with randomised backoff", date(2026, 3, 17)),
]


@pytest.fixture
def model_candidate(memory, llm_settings, llm_server):
    """A pending candidate the model proposed (through the OpenAI SDK), its reason holding markup."""
    memory.persona.provider = "openai"
    memory.persona.save()
    lessons = [make_lesson(memory, text, day=day) for text, day in RETRY_LESSONS]
    llm_server.openai.tool_calls(
        [
            grouping(
                {
                    "ids": lessons,
                    "summary": "Retries need jitter",
                    "reason": "<b>All three</b> trace back to retries in lockstep",
                }
            )
        ]
    )
    llm_server.openai.tool_calls([verdict(lessons)])
    llm_server.openai.text("[PATTERN] Retries use randomised backoff so workers never hit the API in lockstep")
    (candidate,) = promotion_detect(memory=memory).created
    return candidate
