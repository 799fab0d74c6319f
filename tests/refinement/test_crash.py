"""A worker killed mid-run leaves nothing applied; the sweeper marks the run failed."""

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

from django.db import connection

ROOT = Path(__file__).resolve().parents[2]


def child_env(db_path):
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "DJANGO_SETTINGS_MODULE")}
    env.update(SQLITE_PATH=str(db_path), CELERY_BROKER_URL="", PYTHONPATH=str(ROOT))
    return env


def step(env, *args):
    out = subprocess.run(
        [sys.executable, "-m", "tests.refinement.killable", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def migrated_sqlite(path):
    """Arguments for the setup step: the SQLite test database copied to `path` (its schema is migrated
    already), or, when the tests run on PostgreSQL, an empty file the setup step migrates."""
    if connection.vendor != "sqlite":
        return ["--migrate"]
    connection.ensure_connection()
    with contextlib.closing(sqlite3.connect(path)) as target:
        connection.connection.backup(target)
    return []


def test_sigkill_mid_run_then_sweeper_leaves_memory_as_before(transactional_db, tmp_path):
    env = child_env(tmp_path / "crash.sqlite3")
    before = step(env, "setup", *migrated_sqlite(tmp_path / "crash.sqlite3"))
    memory_id = str(before.pop("memory_id"))

    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.refinement.killable", "run", memory_id],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        first = json.loads(proc.stdout.readline())  # blocks until the first operation went through
        assert first == {"op": "delete", "error": False}
        mid = step(env, "dump", memory_id)
        assert mid["runs"][0]["status"] == "running"
        assert mid["op_outcomes"] == ["applied"]
        proc.send_signal(signal.SIGKILL)
        assert proc.wait(timeout=30) == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.stdout.close()
        proc.stderr.close()

    after = step(env, "sweep", memory_id)
    assert after["swept"] == 1
    assert after["lessons"] == before["lessons"]
    assert after["runs"][0]["status"] == "failed"
    assert "stopped responding" in after["runs"][0]["error"]
    assert after["op_outcomes"] == ["rolled_back"]
