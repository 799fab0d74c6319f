"""Benchmarks, run by `make bench` (`python manage.py bench [--only NAME] [--scale F] [--strict]`).

Adding a benchmark: put a module in this package and register a function with `@benchmark`.
Every module here is imported by the runner, so registration is all it takes::

    # memory/bench/api.py
    from memory.bench import benchmark

    @benchmark("api", "Context endpoint under load")
    def run(bench):
        data = bench.tmpdir / "x"          # a scratch folder, removed afterwards
        n = bench.scaled(10_000)           # sizes follow --scale (tests run at a small scale)
        seconds = bench.time(lambda: ..., repeat=7)   # median of the runs, in seconds
        bench.figure("p50 latency", seconds * 1000, unit="ms", target=20)
        bench.figure("requests/s", 1234, unit="req/s", target=1000, higher_is_better=True)
        bench.figure("import", seconds, unit="s", cpu=bench.last_cpu)  # CPU time of the last bench.time
        bench.note("free text printed under the figures")

Each figure is printed as it is recorded; a figure with a target is marked ok or MISSED, and the
runner prints a summary. With `--strict` the command exits non-zero when a target is missed.
Benchmarks write to the configured database: `make bench` points it at a throwaway SQLite file
unless DATABASE_URL is set (then use a scratch database: benchmark data is left in it).
"""

import importlib
import os
import pkgutil
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from django.test.utils import override_settings

_REGISTRY = {}


@dataclass
class Benchmark:
    name: str
    title: str
    func: object


def benchmark(name, title=""):
    """Register `func(bench)` under `name` (what `--only` takes)."""

    def register(func):
        if name in _REGISTRY and _REGISTRY[name].func is not func:
            raise ValueError(f"benchmark {name!r} is registered twice")
        _REGISTRY[name] = Benchmark(name=name, title=title or (func.__doc__ or "").strip().split("\n")[0], func=func)
        return func

    return register


def discover():
    """Import every module of this package so its benchmarks register; returns them by name."""
    for info in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{info.name}")
    return dict(sorted(_REGISTRY.items()))


@dataclass
class Figure:
    label: str
    value: float
    unit: str
    target: float | None = None
    higher_is_better: bool = False
    cpu: float | None = None

    @property
    def met(self):
        if self.target is None:
            return None
        return self.value >= self.target if self.higher_is_better else self.value <= self.target

    def render(self):
        value = f"{self.value:,.3f}" if abs(self.value) < 100 else f"{self.value:,.0f}"
        line = f"  {self.label:<52} {value:>12} {self.unit}"
        if self.cpu is not None:
            line += f"  [cpu {self.cpu:,.3f}]"
        if self.target is not None:
            op = "≥" if self.higher_is_better else "≤"
            line += f"   (target {op} {self.target:g} {self.unit}: {'ok' if self.met else 'MISSED'})"
        return line


@dataclass
class Bench:
    """What a benchmark function gets: scale, a scratch folder, timing and reporting helpers."""

    name: str
    scale: float = 1.0
    out: object = sys.stdout
    tmpdir: Path | None = None
    figures: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    last_cpu: float = 0.0

    def scaled(self, n, minimum=1):
        return max(minimum, round(n * self.scale))

    def figure(self, label, value, *, unit="", target=None, higher_is_better=False, cpu=None):
        """Record and print one figure; `cpu` (same unit) is shown beside it when given."""
        fig = Figure(label, float(value), unit, target, higher_is_better, cpu)
        self.figures.append(fig)
        self.out.write(fig.render() + "\n")
        self.out.flush()
        return fig

    def note(self, text):
        self.notes.append(text)
        self.out.write(f"  · {text}\n")
        self.out.flush()

    def time(self, func, *, repeat=1, setup=None):
        """Median wall time of `repeat` calls of func, in seconds (`setup` runs untimed before each).

        The median CPU time of this process over the same calls is kept in `self.last_cpu`: on a
        shared machine it tells how much of the wall time was spent waiting for a core.
        """
        walls, cpus = [], []
        for _ in range(repeat):
            if setup:
                setup()
            cpu, start = time.process_time(), time.perf_counter()
            func()
            walls.append(time.perf_counter() - start)
            cpus.append(time.process_time() - cpu)
        self.last_cpu = statistics.median(cpus)
        return statistics.median(walls)


def run_benchmarks(*, only=None, scale=1.0, out=sys.stdout):
    """Run the chosen benchmarks (all by default); returns the list of finished Bench objects."""
    found = discover()
    if hasattr(os, "getloadavg"):
        one, five, fifteen = os.getloadavg()
        out.write(f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count() or 0} CPU(s)\n")
    unknown = sorted(set(only or ()) - set(found))
    if unknown:
        raise KeyError(f"no benchmark named {', '.join(unknown)}; known: {', '.join(found)}")
    results = []
    for name, bm in found.items():
        if only and name not in only:
            continue
        out.write(f"\n== {name}: {bm.title}\n")
        out.flush()
        tmpdir = Path(tempfile.mkdtemp(prefix=f"nw-bench-{name}-"))
        bench = Bench(name=name, scale=scale, out=out, tmpdir=tmpdir)
        try:
            # Measure what production runs: DEBUG off, so no per-query logging in the way.
            with override_settings(DEBUG=False):
                bm.func(bench)
        finally:
            shutil.rmtree(tmpdir, ignore_errors=True)
        results.append(bench)
    return results
