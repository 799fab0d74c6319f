"""The benchmark module runs end to end on a small memory (the figures come from `make bench`)."""

import pytest

from memory.bench import promotions as bench
from memory.models import Memory

pytestmark = pytest.mark.django_db


def test_bench_reports_figures_and_leaves_nothing_behind(monkeypatch):
    monkeypatch.setattr(bench, "LESSONS", 300)
    monkeypatch.setattr(bench, "THEMES", 40)
    monkeypatch.setattr(bench, "seed_lessons", lambda memory, _orig=bench.seed_lessons: _orig(memory, n=300, themes=40))
    rows = []
    figures = bench.run(lambda name, value, unit, budget: rows.append((name, value, unit, budget)))
    assert figures["candidates_created"] > 0 and figures["rerun_created"] == 0
    assert any("10k" in name for name, *_ in rows)
    assert not Memory.objects.exists()


def test_bench_registers_with_the_runner(monkeypatch):
    from memory.bench import discover

    monkeypatch.setattr(bench, "seed_lessons", lambda memory, _orig=bench.seed_lessons: _orig(memory, n=200, themes=30))
    figures = []

    class Recorder:
        def figure(self, label, value, *, unit="", target=None):
            figures.append((label, value, unit, target))

    discover()["promotions"].func(Recorder())
    wall = next(f for f in figures if f[0].endswith("(wall)"))
    assert wall[2] == "s" and wall[3] == bench.BUDGET_SECONDS and wall[1] > 0
