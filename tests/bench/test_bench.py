"""The benchmark runner: registration, selection, targets — and the files benchmark at a tiny scale."""

from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection

import memory.bench as bench_pkg
from memory.bench import benchmark, discover
from memory.models import Lesson
from memory.search import index as search_index

pytestmark = pytest.mark.django_db


def _run(*args):
    out = StringIO()
    call_command("bench", *args, stdout=out)
    return out.getvalue()


@pytest.fixture
def registry(monkeypatch):
    """A registry holding the real benchmarks plus whatever a test registers, restored afterwards."""
    discover()
    monkeypatch.setattr(bench_pkg, "_REGISTRY", dict(bench_pkg._REGISTRY))
    return bench_pkg._REGISTRY


def test_files_benchmark_reports_its_figures(registry):
    out = _run("--only", "files", "--scale", "0.02")
    assert "== files:" in out
    for label in (
        "import 200 bullets (2 files)",
        "import again",
        "export 2 files",
        "compile one memory of 200 lessons",
    ):
        assert label in out
    assert "target ≤ 5 ms" in out and "[cpu" in out


def test_registered_benchmark_runs_alone_with_its_target(registry):
    @benchmark("tiny", "A tiny one")
    def tiny(bench):
        seconds = bench.time(lambda: sum(range(100)), repeat=3)
        bench.figure("summing", seconds * 1000, unit="ms", target=1000)
        bench.figure("speed", 5, unit="x", target=10, higher_is_better=True)
        bench.note(f"scale {bench.scale}, tmpdir exists: {bench.tmpdir.is_dir()}")

    out = _run("--only", "tiny", "--scale", "0.5")
    assert "== tiny: A tiny one" in out and "== files" not in out
    assert "(target ≤ 1000 ms: ok)" in out
    assert "(target ≥ 10 x: MISSED)" in out
    assert "scale 0.5, tmpdir exists: True" in out
    assert "1 target(s) missed: speed" in out
    with pytest.raises(CommandError, match="benchmark targets missed"):
        _run("--only", "tiny", "--strict")


def test_growth_benchmark_reports_each_size_and_the_growth(registry):
    out = _run("--only", "growth", "--scale", "0.02")
    for label in (
        "import, 0.1×",
        "import, 10×",
        "compile, 1×",
        "promotion detection, 10×",
        "import growth (CPU), 1× → 10× the data",
        "compile growth (CPU), 0.1× → 1× the data",
    ):
        assert label in out
    assert "target ≤ 12 ×" in out


def test_list_and_unknown_names(registry):
    assert "files" in _run("--list")
    with pytest.raises(CommandError, match=r"no benchmark named nope; known: .*files"):
        _run("--only", "nope")
    with pytest.raises(CommandError, match="--scale must be a positive number"):
        _run("--scale", "0")


def test_a_name_cannot_be_registered_twice(registry):
    benchmark("dup")(lambda bench: None)
    with pytest.raises(ValueError, match="registered twice"):
        benchmark("dup")(lambda bench: None)


def test_compaction_benchmark_times_apply_with_and_without_appended_lessons(registry):
    out = _run("--only", "compaction")
    for label in (
        "apply, full history, 0 lessons appended since the proposal",
        "apply, full history, 100 lessons appended since the proposal",
    ):
        assert label in out
    from memory.models import Lesson

    assert not Lesson.objects.exists()  # everything it wrote was rolled back


def test_inbox_benchmark_reports_its_figures(registry, settings, tmp_path):
    settings.DEMO_CHECKOUT_DIR = str(tmp_path / "demo")
    out = _run("--only", "inbox", "--scale", "0.02")
    assert "inbox on the demo data" in out and "pending over 10 more memories" in out
    assert "time with many pending ÷ time on the demo data" in out
    assert "(target ≤ 0 queries: ok)" in out and "(target ≤ 1024 KiB: ok)" in out


@pytest.mark.django_db(transaction=True)  # the decisions commit, so their events are sent after the commit
def test_webhooks_benchmark_sends_to_its_receiver_and_reports_latency(registry):
    out = _run("--only", "webhooks", "--scale", "0.05")
    assert "== webhooks:" in out
    assert "50 events sent by one worker" in out
    assert "decision to delivery, p50 of 10" in out and "decision to delivery, p99 of 10" in out


def test_search_import_benchmark_compares_imports_with_and_without_the_index(registry):
    out = _run("--only", "search-import", "--scale", "0.01")
    assert "== search-import:" in out
    for label in (
        "import of 200 lessons, index kept",
        "import of 200 lessons, without the index",
        "import with the index ÷ without (wall)",
    ):
        assert label in out
    assert "target ≤ 1.15 ×" in out and "5 pairs, ratio per pair wall" in out
    # Where the cost goes: the same text written with no index, the least one, and the one shipped.
    least = "+ GIN over the words as written, ready-made" if connection.vendor == "postgresql" else "+ FTS5 over"
    for label in ("200 lessons' text written alone, per lesson", least, "+ the index as shipped", "least ratio"):
        assert label in out
    assert "nw_bench_index_floor" not in connection.introspection.table_names()  # rolled back
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            # The index is whole afterwards: every lesson found, those imported without it too (a
            # warm-up import, then five pairs of 200 lessons).
            assert not search_index.sqlite_triggers_missing(cursor)
            cursor.execute("SELECT count(*) FROM memory_lesson_search WHERE memory_lesson_search MATCH 'case'")
            assert cursor.fetchone()[0] == Lesson.objects.count() == 11 * 200
        else:
            # Each import was rolled back with the column's drop: the table is as it was.
            assert not Lesson.objects.exists()
            cursor.execute("SELECT count(*) FROM pg_indexes WHERE indexname = 'lesson_search_gin'")
            assert cursor.fetchone()[0] == 1


def test_conflicts_benchmark_reports_both_sizes_the_growth_and_the_batch(registry):
    out = _run("--only", "conflicts", "--scale", "0.02")
    for label in (
        "full pass, 200 lessons in one memory",
        "full pass, 2,000 lessons in one memory",
        "full pass growth (CPU), 200 → 2,000 lessons",
        "incremental pass, 8 new lessons into 2,000 (CPU)",
        "promotion detection, 2,008 lessons",
        "conflicts full pass ÷ promotion detection (CPU)",
        "full pass, 2,000 lessons over 10 memories",
        "incremental pass, 8 new lessons into 1 of 10 memories (CPU)",
    ):
        assert label in out
    assert "20 of 20 planted conflicts found" in out
    assert "2 of 2 planted conflicts with the batch found" in out
    assert "(target ≤ 1 s: ok)" in out
