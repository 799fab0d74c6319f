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


def test_bench_falls_back_to_a_table_report(monkeypatch):
    monkeypatch.setattr(bench, "seed_lessons", lambda memory, _orig=bench.seed_lessons: _orig(memory, n=200, themes=30))
    tables = []
    bench.run(lambda title, rows: tables.append((title, rows)))
    assert tables and tables[0][1][0]["unit"] == "s"
