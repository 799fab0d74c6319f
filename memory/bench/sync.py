"""Sync passes over the files bench's tree: nothing new, and 1% of the folders appended to."""

import os
import time
from datetime import date

from memory.bench import benchmark
from memory.bench.files import generate_tree
from memory.formats.lines import section_header, working_line
from memory.sync.engine import find_folders, sync_pass


def _stat_tree(root):
    """What a pass over unchanged folders cannot avoid: finding the folders and stat-ing their files."""
    for folder in find_folders(root):
        for name in ("core.md", "working.md"):
            os.stat(folder.path / name)


def _append(folders, n):
    for i, folder in enumerate(folders[:n]):
        fd = os.open(folder.path / "working.md", os.O_WRONLY | os.O_APPEND)
        text = (
            f"{section_header(date(2026, 3, 1), 'OBSERVATION')}\n"
            f"{working_line('OBSERVATION', f'Appended by the bench run {time.time_ns()} ({i})')}\n\n"
        )
        os.write(fd, text.encode())
        os.close(fd)


def _measure(bench, personas, projects, label):
    root = bench.tmpdir / f"agents-{label}"
    files, bullets = generate_tree(
        root, personas=personas, projects=projects, core_per_memory=20, working_per_memory=180, persona=f"Sync {label}"
    )
    start = time.perf_counter()
    first = sync_pass(root)
    first_seconds = time.perf_counter() - start
    assert not first.failed, [f.error for f in first.failed]
    folders = find_folders(root)
    idle = bench.time(lambda: sync_pass(root), repeat=3)
    idle_cpu = bench.last_cpu
    stat = bench.time(lambda: _stat_tree(root), repeat=3)
    n = max(1, len(folders) // 100)
    appended = bench.time(lambda: sync_pass(root), setup=lambda: _append(folders, n), repeat=3)
    appended_cpu = bench.last_cpu
    written = sum(len(f.written) for f in first.folders)
    return {
        "written": written,
        "files": files,
        "bullets": bullets,
        "folders": len(folders),
        "first": first_seconds,
        "idle": idle,
        "idle_cpu": idle_cpu,
        "stat": stat,
        "appended": appended,
        "appended_cpu": appended_cpu,
        "n": n,
    }


@benchmark("sync", "sync_memory passes over 1,000 Night Watch files: nothing new, and 1% of folders appended to")
def run(bench):
    # The files bench's tree: 25 personas × 20 projects = 500 folders, 1,000 files, 100,000 bullets.
    big = _measure(bench, bench.scaled(25), bench.scaled(20), "1x")
    small = _measure(bench, max(1, bench.scaled(25) // 10), bench.scaled(20), "0.1x")
    bench.note(
        f"first pass (imports {big['bullets']:,} bullets, rewrites {big['written']} files): {big['first']:.1f} s"
    )
    bench.figure(
        f"pass, nothing new ({big['files']:,} files; median of 3)",
        big["idle"] * 1000,
        unit="ms",
        cpu=big["idle_cpu"] * 1000,
        target=big["files"] * 0.5,
    )
    bench.figure(f"finding and stat-ing the same {big['files']:,} files", big["stat"] * 1000, unit="ms")
    bench.figure("pass, nothing new ÷ stat-ing the tree", big["idle"] / big["stat"], unit="×", target=10)
    bench.figure(
        f"pass, {big['n']} of {big['folders']} folders appended to (median of 3)",
        big["appended"] * 1000,
        unit="ms",
        cpu=big["appended_cpu"] * 1000,
        target=big["files"] * 1.5,
    )
    per_idle = (big["idle"] / big["folders"]) / (small["idle"] / small["folders"])
    per_appended = (big["appended"] / big["folders"]) / (small["appended"] / small["folders"])
    bench.note(
        f"at {small['files']:,} files: nothing new {small['idle'] * 1000:.0f} ms, "
        f"{small['n']} appended {small['appended'] * 1000:.0f} ms"
    )
    bench.figure(
        f"growth per folder, nothing new ({small['files']:,} → {big['files']:,} files)", per_idle, unit="×", target=1.5
    )
    bench.figure(
        f"growth per folder, 1% appended ({small['files']:,} → {big['files']:,} files)",
        per_appended,
        unit="×",
        target=1.5,
    )
