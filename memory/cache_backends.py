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
import time
import zlib

from django.core.cache.backends.base import DEFAULT_TIMEOUT
from django.core.cache.backends.filebased import FileBasedCache
from django.core.cache.backends.locmem import LocMemCache


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
