"""The benchmark runs end to end on a small memory (the figures come from `make bench`)."""

import os

import pytest

from memory.bench import Bench
from memory.bench import promotions as bench
from memory.models import Memory

pytestmark = pytest.mark.django_db


def test_bench_scores_planted_lessons_and_leaves_nothing_behind():
    figures = bench.measure(n=600, recurring=30)
    assert figures["candidates"] > 0 and figures["rerun_created"] == 0
    assert 0 < figures["theme_recall"] <= 1 and 0 < figures["pair_precision"] <= 1
    assert not Memory.objects.exists()


def test_no_bench_candidate_is_too_large_or_under_the_dates_rule():
    figures = bench.measure(n=600, recurring=30)
    assert figures["largest_candidate"] <= 12
    assert figures["fewest_dates"] >= 3


def test_planted_data_holds_what_the_bench_claims():
    lessons = bench.generate(n=400, recurring=20)
    by_theme = {}
    for _, _, day, theme in lessons:
        if theme:
            by_theme.setdefault(theme, set()).add(day)
    recurring = [t for t, days in by_theme.items() if len(days) >= 3]
    assert len(recurring) == 20
    assert any(len(days) == 2 for days in by_theme.values())
    assert any(len(days) == 1 for days in by_theme.values())
    assert sum(theme is None for *_, theme in lessons) > 200


def test_bench_registers_with_the_runner():
    from memory.bench import discover

    with open(os.devnull, "w") as devnull:
        recorded = Bench(name="promotions", scale=0.06, out=devnull)
        discover()["promotions"].func(recorded)
    labels = [f.label for f in recorded.figures]
    assert {"candidates", "candidate precision", "theme recall", "pair precision", "pair recall"} <= set(labels)
    wall = recorded.figures[0]
    assert wall.unit == "s" and wall.target == bench.BUDGET_SECONDS and wall.value > 0
