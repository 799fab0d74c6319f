"""Whatever sequence of actions a model asks for, a run ends in one of two states only."""

import pytest
from django.db import transaction
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from memory.models import Lesson, RefinementRun
from tests.conftest import examples
from tests.factories import MemoryFactory

from .helpers import core, run_with, state
from .scripted import ScriptedEngine

pytestmark = pytest.mark.django_db

N = 12
idx = st.integers(min_value=-1, max_value=N)  # -1 and N stand for ids that do not exist
text = st.text(alphabet="abcdefgh ", min_size=0, max_size=140)
op = st.one_of(
    st.tuples(st.just("delete"), idx, st.none()),
    st.tuples(st.just("update"), idx, text),
    st.tuples(st.just("protect"), idx, st.none()),
    st.tuples(st.just("consolidate"), st.lists(idx, min_size=0, max_size=4), text),
    st.tuples(st.just("search"), st.none(), text),
    st.tuples(st.just("complete"), st.none(), st.none()),
)


def core_chars(memory):
    return sum(
        len(t)
        for t in Lesson.objects.filter(memory=memory, tier="core", status="active").values_list("text", flat=True)
    )


@settings(max_examples=examples(120), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    ops=st.lists(op, max_size=30),
    sizes=st.lists(st.integers(20, 200), min_size=N, max_size=N),
    protected=st.sets(st.integers(0, N - 1), max_size=4),
    threshold=st.sampled_from([0.5, 0.8, 0.9, 0.97]),
)
def test_any_run_completes_within_limits_or_leaves_memory_untouched(db, ops, sizes, protected, threshold):
    with transaction.atomic():
        memory = MemoryFactory()
        memory.persona.refinement_threshold = threshold
        memory.persona.save()
        lessons = [core(memory, f"L{i} " + "x" * size, protected=i in protected) for i, size in enumerate(sizes)]

        def lid(i):
            return lessons[i].pk if 0 <= i < N else 10**9 + i

        calls = []
        for name, target, arg in ops:
            if name in ("delete", "protect"):
                calls.append((name, {"id": lid(target)}))
            elif name == "update":
                calls.append((name, {"id": lid(target), "text": arg}))
            elif name == "consolidate":
                calls.append((name, {"ids": [lid(t) for t in target], "text": arg}))
            elif name == "search":
                calls.append((name, {"query": arg}))
            else:
                calls.append((name, {}))
        before, chars_before = state(memory), core_chars(memory)
        protected_before = {(lesson.pk, lesson.text) for lesson in lessons if lesson.protected}

        run = run_with(memory, ScriptedEngine(calls))
        event(f"run {run.status}")

        if run.status == RefinementRun.Status.COMPLETED:
            assert run.ops_used <= 10
            assert core_chars(memory) / chars_before >= threshold
            assert run.retention >= threshold
            # protected lessons are still there, word for word, and active
            assert protected_before <= set(
                Lesson.objects.filter(memory=memory, status="active", protected=True).values_list("id", "text")
            )
        else:
            assert run.status == RefinementRun.Status.TERMINATED
            assert state(memory) == before
        transaction.set_rollback(True)
