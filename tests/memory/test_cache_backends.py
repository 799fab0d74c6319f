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


@pytest.fixture
def tracked():
    """The Redis versions cache of one process, on the Redis CACHE_URL names (a scratch db of this run)."""
    import secrets

    from memory.cache_backends import TrackedRedisCache
    from tests.conftest import requires_services

    url = os.environ.get("CACHE_URL", "")
    if not url.startswith("redis"):
        if requires_services():
            pytest.fail("NW_REQUIRE_SERVICES=1 but CACHE_URL does not name Redis")
        pytest.skip("needs Redis; set CACHE_URL=redis://…")
    cache = TrackedRedisCache(url, {"KEY_PREFIX": f"test-{secrets.token_hex(4)}"})
    yield cache
    # Its own keys only: a FLUSHDB would tell every tracking client (other test workers' too) to
    # drop what it keeps, and a test that counts trips to Redis there would see one more.
    client = cache._cache.get_client(write=True)
    keys = list(client.scan_iter(match=f"{cache.key_prefix}:*"))
    if keys:
        client.delete(*keys)


def _other_process(cache, code):
    """Run `code` with `r` (a plain Redis client) and `key(name)` (this cache's key) in another process."""
    import subprocess
    import sys

    prefix = cache.key_prefix
    subprocess.run(
        [
            sys.executable,
            "-c",
            "import pickle, redis\n"
            f"r = redis.Redis.from_url({cache._servers[0]!r})\n"
            f"key = lambda name: {prefix!r} + ':1:' + name\n" + code,
        ],
        check=True,
    )


def test_a_write_in_another_process_is_seen_at_once(tracked):
    tracked.set("nw:memory:1:2", (7, 3))
    assert tracked.get("nw:memory:1:2") == (7, 3)
    assert tracked.get("nw:memory:1:2") == (7, 3)  # now kept in this process
    _other_process(tracked, "r.set(key('nw:memory:1:2'), pickle.dumps((7, 4)))")
    assert tracked.get("nw:memory:1:2") == (7, 4)
    _other_process(tracked, "r.delete(key('nw:memory:1:2'))")
    assert tracked.get("nw:memory:1:2") is None
    assert tracked.get("nw:memory:1:2", "gone") == "gone"


def test_a_kept_value_costs_no_trip_to_redis(tracked, monkeypatch):
    tracked.set("k", ("row",))
    assert tracked.get("k") == ("row",)
    trips = []
    real = tracked._cache.get
    monkeypatch.setattr(tracked._cache, "get", lambda *a: trips.append(a) or real(*a))
    for _ in range(5):
        assert tracked.get("k") == ("row",)
    assert trips == []
    tracked.delete("k")  # this process's own write is seen at once too
    assert tracked.get("k") is None and len(trips) == 1


def test_a_read_that_raced_a_write_is_not_kept(tracked):
    tracked.set("k", ("old",))

    def fetch_then_another_process_writes(key, default):
        value = tracked._cache.get(key, default)
        _other_process(tracked, "r.set(key('k'), pickle.dumps(('new',)))")
        return value

    assert tracked._tracker().get(tracked.make_key("k"), fetch_then_another_process_writes) == ("old",)
    assert tracked.get("k") == ("new",)


def test_a_lost_tracking_connection_forgets_what_was_kept(tracked):
    tracked.set("k", ("one",))
    assert tracked.get("k") == ("one",)
    tracker = tracked._tracker()
    tracker.conn.disconnect()  # invalidations sent meanwhile would be lost
    _other_process(tracked, "r.set(key('k'), pickle.dumps(('two',)))")
    assert tracked.get("k") == ("two",)
