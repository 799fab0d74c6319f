"""Cache backends for the values an agent's context read takes on every turn (see `memory.context_cache`).

`ProcessCache` is Django's local-memory cache without the pickling: the values kept there (a
token's scope, a project id, compiled text) are immutable, so the stored object itself can be
handed back, and a read costs a dict lookup instead of an unpickling.

`SharedFileCache` is Django's file-based cache (shared by every process on the host) that
remembers what it last read from each file, so reading a value that has not changed costs one
`stat` instead of opening, reading, decompressing and unpickling the file.
"""

import os
import pickle
import threading
import time
import zlib

from django.core.cache.backends.base import DEFAULT_TIMEOUT
from django.core.cache.backends.filebased import FileBasedCache
from django.core.cache.backends.locmem import LocMemCache
from django.core.cache.backends.redis import RedisCache


class ProcessCache(LocMemCache):
    """LocMemCache holding values as they are: store only immutable values (str, int, tuples of them)."""

    def validate_key(self, key):
        # The keys are this project's own; the check only warns about keys memcached would refuse.
        pass

    def get(self, key, default=None, version=None):
        key = self.make_and_validate_key(key, version=version)
        with self._lock:
            if self._has_expired(key):
                self._delete(key)
                return default
            value = self._cache[key]
            self._cache.move_to_end(key, last=False)
        return value

    def set(self, key, value, timeout=DEFAULT_TIMEOUT, version=None):
        key = self.make_and_validate_key(key, version=version)
        with self._lock:
            self._set(key, value, timeout)

    def add(self, key, value, timeout=DEFAULT_TIMEOUT, version=None):
        key = self.make_and_validate_key(key, version=version)
        with self._lock:
            if self._has_expired(key):
                self._set(key, value, timeout)
                return True
            return False

    def incr(self, key, delta=1, version=None):
        key = self.make_and_validate_key(key, version=version)
        with self._lock:
            if self._has_expired(key):
                self._delete(key)
                raise ValueError(f"Key '{key}' not found")
            value = self._cache[key] + delta
            self._cache[key] = value
            self._cache.move_to_end(key, last=False)
        return value


class SharedFileCache(FileBasedCache):
    """FileBasedCache whose reads of an unchanged file cost one `stat`. Store only immutable values.

    A cache file is only ever replaced whole (written aside, then renamed into place), rewritten by
    `touch` or removed, so while it has the inode, size and modification time it had when this
    process read it, it holds the same value: that value (and its expiry) is handed back without
    reading the file. Modification times advance in clock ticks, so a file read within
    SETTLED_SECONDS of being written is not remembered: a replacement written in the same tick
    could carry the same stamp.
    """

    SETTLED_SECONDS = 1.0
    MAX_REMEMBERED = 10_000

    def __init__(self, dir, params):
        super().__init__(dir, params)
        self._files = {}  # (key, version) -> file name (an md5 of the key per read otherwise)
        self._seen = {}  # file name -> ((inode, size, mtime_ns), expiry, value)

    def _key_to_file(self, key, version=None):
        name = self._files.get((key, version))
        if name is None:
            if len(self._files) >= self.MAX_REMEMBERED:
                self._files.clear()
            name = self._files[(key, version)] = super()._key_to_file(key, version)
        return name

    def get(self, key, default=None, version=None):
        fname = self._key_to_file(key, version)
        try:
            st = os.stat(fname)
        except FileNotFoundError:
            self._seen.pop(fname, None)
            return default
        seen = self._seen.get(fname)
        if seen is not None and seen[0] == (st.st_ino, st.st_size, st.st_mtime_ns):
            expiry = seen[1]
            if expiry is None or expiry >= time.time():
                return seen[2]
        return self._read(fname, default)

    def _read(self, fname, default):
        self._seen.pop(fname, None)
        try:
            with open(fname, "rb") as f:
                st = os.fstat(f.fileno())
                try:
                    expiry = pickle.load(f)
                except EOFError:
                    expiry = 0  # an empty file counts as expired
                if expiry is not None and expiry < time.time():
                    f.close()
                    self._delete(fname)
                    return default
                value = pickle.loads(zlib.decompress(f.read()))
        except FileNotFoundError:
            return default
        if time.time() - st.st_mtime_ns / 1e9 > self.SETTLED_SECONDS:
            if len(self._seen) >= self.MAX_REMEMBERED:
                self._seen.clear()
            self._seen[fname] = ((st.st_ino, st.st_size, st.st_mtime_ns), expiry, value)
        return value


class TrackedRedisCache(RedisCache):
    """Django's Redis cache whose reads are served from this process once fetched, kept right by Redis.

    Redis tracks the keys under this cache's prefix for each process (`CLIENT TRACKING … BCAST PREFIX`,
    redirected to a subscription of the same connection) and pushes the name of every key that changes
    or goes, from whichever process wrote it. Before each read the process takes in what has arrived on
    that connection (a poll that does not wait), so a write shows at once in every process, and a read
    of an unchanged value costs no trip to Redis. A read that raced a write is not kept (the value is
    only kept if no invalidation of its key came while it was fetched). If the tracking connection
    fails, the process forgets what it kept and reads Redis until it is back.

    (redis-py's own client-side caching does the same over RESP3 but refuses servers before Redis 7.4.)
    Store only immutable values: the object itself is handed back to every reader in the process.
    """

    LOCAL_SECONDS = 10  # a kept value's longest life here even with no invalidation (Redis expiry is lazy)

    def __init__(self, server, params):
        super().__init__(server, params)
        self._tracker_of_pid = (None, None)

    def _tracker(self):
        pid, tracker = self._tracker_of_pid
        if pid != os.getpid():  # a forked worker opens its own tracking connection
            tracker = _Tracker(self._servers[0], f"{self.key_prefix}:" if self.key_prefix else "", self.LOCAL_SECONDS)
            self._tracker_of_pid = (os.getpid(), tracker)
        return tracker

    def get(self, key, default=None, version=None):
        key = self.make_and_validate_key(key, version=version)
        value = self._tracker().get(key, self._cache.get)
        return default if value is _MISSING else value

    def set(self, key, value, timeout=DEFAULT_TIMEOUT, version=None):
        self._tracker().forget(self.make_and_validate_key(key, version=version))
        super().set(key, value, timeout, version)

    def delete(self, key, version=None):
        self._tracker().forget(self.make_and_validate_key(key, version=version))
        return super().delete(key, version)

    def clear(self):
        self._tracker().forget_all()
        return super().clear()


_MISSING = object()


class _Tracker:
    """One process's kept values and its tracking connection (see TrackedRedisCache)."""

    def __init__(self, url, prefix, seconds):
        self.url, self.prefix, self.seconds = url, prefix, seconds
        self.lock = threading.Lock()
        self.values = {}  # key -> (monotonic expiry, value)
        self.fetching = {}  # key -> token of the read in flight that may keep its value
        self.conn = None

    def _connect(self):
        import redis

        conn = redis.ConnectionPool.from_url(self.url, protocol=2, socket_timeout=2).make_connection()
        conn.connect()
        conn.send_command("CLIENT", "ID")
        client_id = conn.read_response()
        args = ["CLIENT", "TRACKING", "ON", "REDIRECT", client_id, "BCAST"]
        if self.prefix:
            args += ["PREFIX", self.prefix]
        conn.send_command(*args)
        conn.read_response()
        conn.send_command("SUBSCRIBE", "__redis__:invalidate")
        conn.read_response()
        self.conn, self.sock = conn, conn._sock

    def _sync(self):
        """Take in the invalidations that arrived; False when there is no working tracking connection."""
        import redis

        try:
            if self.conn is not None and self.conn._sock is not self.sock:
                raise OSError("tracking connection lost")  # redis-py would reconnect it without tracking
            if self.conn is None:
                self.values.clear()  # invalidations may have been missed while disconnected
                self.fetching.clear()
                self._connect()
            while self.conn.can_read(timeout=0):
                message = self.conn.read_response()
                if message[0] != b"message":
                    continue
                keys = message[2]
                if keys is None:  # the database was flushed
                    self.values.clear()
                    self.fetching.clear()
                    continue
                for key in keys:
                    key = key.decode()
                    self.values.pop(key, None)
                    self.fetching.pop(key, None)
            return True
        except (redis.RedisError, OSError):
            if self.conn is not None:
                self.conn.disconnect()
            self.conn = None
            return False

    def get(self, key, fetch):
        with self.lock:
            tracked = self._sync()
            if tracked:
                kept = self.values.get(key)
                if kept is not None and kept[0] > time.monotonic():
                    return kept[1]
                token = self.fetching[key] = object()
        value = fetch(key, _MISSING)
        if tracked and value is not _MISSING:
            with self.lock:
                # Kept only if no invalidation of the key arrived while it was being read.
                if self._sync() and self.fetching.get(key) is token:
                    self.values[key] = (time.monotonic() + self.seconds, value)
                if self.fetching.get(key) is token:
                    del self.fetching[key]
        return value

    def forget(self, key):
        with self.lock:
            self.values.pop(key, None)
            self.fetching.pop(key, None)

    def forget_all(self):
        with self.lock:
            self.values.clear()
            self.fetching.clear()
