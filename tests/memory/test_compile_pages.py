"""compile_memory reads only the pages its budgets need; the choice must equal the whole-tier one."""

from datetime import date, timedelta

import pytest

from memory import selectors
from memory.formats.lines import render_core, render_working, working_order
from memory.models import Tier
from memory.selectors import active_lessons, compile_memory, with_refs
from tests.factories import make_lesson

pytestmark = pytest.mark.django_db


def _select_within_budget(items, budget, render):
    """The rule, spelled out on whole texts: must-keeps first, then lessons in priority order up
    to the first one whose text (rendered with everything kept so far, in file order) goes over."""
    kept = {lesson.pk for lesson, _ in items if lesson.is_must_keep}

    def size(ids):
        return len(render(sorted((item for item in items if item[0].pk in ids), key=lambda item: item[0].pk)))

    for lesson, _ in items:
        if lesson.pk in kept:
            continue
        if size(kept | {lesson.pk}) > budget:
            break
        kept.add(lesson.pk)
    return kept


def _reference(memory):
    core = with_refs(active_lessons(memory, Tier.CORE))
    working = with_refs(active_lessons(memory, Tier.WORKING))
    core_ids = _select_within_budget(core, memory.core_char_budget, render_core)
    working_ids = _select_within_budget(list(reversed(working)), memory.working_char_budget, render_working)
    return (
        [lesson.pk for lesson, _ in core if lesson.pk in core_ids],
        [lesson.pk for lesson, _ in core if lesson.pk not in core_ids],
        [lesson.pk for lesson, _ in working_order([item for item in working if item[0].pk in working_ids])],
        [lesson.pk for lesson, _ in working if lesson.pk not in working_ids],
    )


@pytest.mark.parametrize("core_budget, working_budget", [(4000, 8000), (1500, 1200), (300, 500), (100_000, 100_000)])
def test_paged_choice_equals_whole_tier_choice(memory, monkeypatch, core_budget, working_budget):
    monkeypatch.setattr(selectors, "_first_page", lambda budget: 3)  # many pages with a small memory
    memory.core_char_budget, memory.working_char_budget = core_budget, working_budget
    memory.save()
    categories = ["OBSERVATION", "TODO", "ARCHITECTURE", "HYPOTHESIS"]
    for i in range(40):
        make_lesson(
            memory,
            f"Core pattern {i} " + "c" * (i % 9) * 10,
            category="PATTERN",
            tier="core",
            protected=(i in (30, 35)),
            refs=f"src/core_{i}.py#L{i + 1}",
        )
        # Sections of 2–3 lessons with mixed tags (the header takes its first lesson's), must-keeps
        # inside sections and alone, so every way a lesson can open, join or split a section occurs.
        make_lesson(
            memory,
            f"Working note {i} " + "w" * (i % 7) * 10,
            day=date(2026, 1, 1) + timedelta(days=i // 3),
            section=i // 3 + (i % 3 == 2),
            category=categories[i % 4],
            relevance="critical" if i in (2, 5, 16, 31) else "medium",
        )
    compiled = compile_memory(memory)
    assert (compiled.core_kept, compiled.core_cut, compiled.working_kept, compiled.working_cut) == _reference(memory)
    assert compiled.working_chars <= max(
        working_budget,
        len(render_working([item for item in with_refs(active_lessons(memory, Tier.WORKING)) if item[0].is_must_keep])),
    )


def test_compile_query_count_does_not_grow_with_the_memory(memory, django_assert_max_num_queries):
    for i in range(450):
        make_lesson(memory, f"Working note {i} about src/m{i}.py", refs=f"src/m{i}.py#L1")
    # must-keep, core page (+refs when any), working page + refs
    with django_assert_max_num_queries(5):
        compiled = compile_memory(memory)
    assert 0 < len(compiled.working_kept) < 450
    with django_assert_max_num_queries(1):  # the cut ids, read when asked
        assert len(compiled.working_cut) == 450 - len(compiled.working_kept)
