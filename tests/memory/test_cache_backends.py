"""The caches a context read uses: values come back as stored, and a changed file is always read again."""

import os

import pytest

from memory.cache_backends import ProcessCache, SharedFileCache


@pytest.fixture
def files(tmp_path):
    return SharedFileCache(str(tmp_path / "versions"), {})


def _age(cache, key, seconds):
    """Make the file look written `seconds` ago (as if another process wrote it then)."""
    name = cache._key_to_file(key)
    stat = os.stat(name)
    os.utime(name, ns=(stat.st_atime_ns, stat.st_mtime_ns - int(seconds * 1e9)))


def test_process_cache_keeps_values_and_expiry():
    cache = ProcessCache("test-process-cache", {})
    cache.clear()
    text = "## Core Lessons\n- [PATTERN] one"
    cache.set("nw:compiled:1", text, timeout=60)
    assert cache.get("nw:compiled:1") is text
    cache.set("gone", 1, timeout=-1)
    assert cache.get("gone", "missing") == "missing"
    assert cache.add("n", 1) and not cache.add("n", 5)
    assert cache.incr("n", 2) == 3 and cache.get("n") == 3
    cache.delete("n")
    assert cache.get("n") is None


def test_shared_file_cache_sees_every_change(files, tmp_path):
    other = SharedFileCache(str(tmp_path / "versions"), {})  # another process on the same folder
    files.set("nw:memory:1:1", (1, 1, 5, 4000, 8000), timeout=60)
    _age(files, "nw:memory:1:1", 5)
    assert files.get("nw:memory:1:1") == (1, 1, 5, 4000, 8000)
    assert files.get("nw:memory:1:1") == (1, 1, 5, 4000, 8000)  # remembered: the file is unchanged
    other.set("nw:memory:1:1", (1, 1, 6, 4000, 8000), timeout=60)  # same size, new version
    assert files.get("nw:memory:1:1") == (1, 1, 6, 4000, 8000)
    other.delete("nw:memory:1:1")
    assert files.get("nw:memory:1:1") is None
    other.set("nw:memory:1:1", (1, 1, 7, 4000, 8000), timeout=60)
    assert files.get("nw:memory:1:1") == (1, 1, 7, 4000, 8000)


def test_shared_file_cache_honours_expiry_of_a_remembered_value(files, monkeypatch):
    import time

    files.set("k", (1,), timeout=60)
    _age(files, "k", 5)
    assert files.get("k") == (1,)
    later = time.time() + 120
    monkeypatch.setattr(time, "time", lambda: later)
    assert files.get("k", "missing") == "missing"
    assert not os.path.exists(files._key_to_file("k"))


def test_shared_file_cache_touch_and_clear(files):
    files.set("k", (1,), timeout=60)
    _age(files, "k", 5)
    assert files.get("k") == (1,)
    assert files.touch("k", timeout=-1)  # rewritten in place, already expired
    assert files.get("k") is None
    files.set("k", (2,), timeout=60)
    files.clear()
    assert files.get("k") is None
