import pytest

from memory import services
from tests.factories import make_lesson


@pytest.fixture
def actor(approver):
    return services.Actor.for_user(approver)


@pytest.fixture
def lessons(memory):
    """A small working memory with every kind of lesson the rules care about, plus one core lesson."""
    memory.compaction_target_lines = 4
    memory.save()
    return {
        "a": make_lesson(memory, "Retry uses a fixed 1s delay", refs="src/queue/worker.ts#L88-L95"),
        "b": make_lesson(memory, "Queue worker retry has no backoff", refs="src/queue/worker.ts#L88-L95"),
        "c": make_lesson(memory, "look into error handling", category="TODO", vague=True, relevance="low"),
        "d": make_lesson(
            memory,
            "Audit log is event-sourced for replay",
            category="DECISION",
            refs="src/events/store.ts#L5-L15",
            protected=True,
        ),
        "e": make_lesson(
            memory,
            "Token refresh may race in the session middleware",
            category="HYPOTHESIS",
            refs="src/auth/session.ts#L40",
            relevance="critical",
        ),
        "f": make_lesson(memory, "Reports endpoint runs one query per row", refs="src/reports/views.py#L12-L30"),
        "core": make_lesson(
            memory, "Services own all writes", category="PATTERN", tier="core", refs="memory/services.py#L1"
        ),
    }


@pytest.fixture
def good_output(lessons):
    ids = {k: v.pk for k, v in lessons.items()}
    return (
        "- [OBSERVATION] Queue worker retries after a fixed 1s with no backoff "
        f"(ref: src/queue/worker.ts#L88-L95) {{ids: {ids['a']}, {ids['b']}}}\n"
        f"- [DECISION] Audit log is event-sourced for replay (ref: src/events/store.ts#L5-L15) {{ids: {ids['d']}}}\n"
        "- [HYPOTHESIS] Token refresh may race in the session middleware (ref: src/auth/session.ts#L40) "
        f"{{ids: {ids['e']}}}\n"
        "- [OBSERVATION] Reports endpoint issues one query per row (N+1) (ref: src/reports/views.py#L12-L30) "
        f"{{ids: {ids['f']}}}\n"
        f"DROP {{ids: {ids['c']}}}: too vague to act on\n"
    )
