"""The files of a synced folder on disk, and what a pass remembers of them (`SyncedFolder.files`).

A file is read through a descriptor kept open until it is replaced, so the replace can check at the
last moment that the file still holds what was read. The old inode stays linked as
`.<file>.sync-prev` after a replace: an O_APPEND writer that opened it before may still add to it.
"""

import contextlib
import hashlib
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memory.formats.nightwatch import CORE_FILE, WORKING_FILE

FILES = (CORE_FILE, WORKING_FILE)

Stat = list[int]  # [inode, size, mtime in ns], as stored


class SyncError(Exception):
    """This folder cannot be synced now; the message says why. Nothing of it was written."""


class Raced(Exception):
    """The file changed between the read and the replace: read it again."""


# --- what a pass remembers of each file ------------------------------------------------------


@dataclass(slots=True)
class FileLine:
    """One lesson line of a file as a pass left it: what identifies its text and which lesson it stands for."""

    key: str  # the line's tier, category, text and refs, hashed (see memory.sync.changes.parsed_key)
    lesson_id: int
    conflict_id: int = 0  # a waiting conflict whose Night Watch line stands in the lesson's place

    @classmethod
    def from_json(cls, row: list) -> "FileLine":
        key, lesson_id, conflict_id = row
        return cls(key, lesson_id, conflict_id)

    def to_json(self) -> list:
        return [self.key, self.lesson_id, self.conflict_id]


@dataclass(slots=True)
class KeptInode:
    """The old inode kept after a replace, as the pass left it (what it held, and its stat then)."""

    size: int
    sha: str
    stat: Stat | None

    @classmethod
    def from_json(cls, data: dict) -> "KeptInode":
        return cls(data["size"], data["sha"], data["stat"])

    def to_json(self) -> dict:
        return {"size": self.size, "sha": self.sha, "stat": self.stat}


@dataclass(slots=True)
class FileState:
    """One file as the last pass left it: its stat, size and hash, its lesson lines in file order."""

    stat: Stat | None
    size: int
    sha: str
    lines: list[FileLine]
    prev: KeptInode | None = None

    @classmethod
    def from_json(cls, data: dict) -> "FileState":
        prev = data.get("prev")
        return cls(
            stat=data.get("stat"),
            size=data.get("size", 0),
            sha=data.get("sha", ""),
            lines=[FileLine.from_json(row) for row in data.get("lines", [])],
            prev=KeptInode.from_json(prev) if prev else None,
        )

    def to_json(self) -> dict:
        data: dict[str, Any] = {
            "stat": self.stat,
            "size": self.size,
            "sha": self.sha,
            "lines": [line.to_json() for line in self.lines],
        }
        if self.prev:
            data["prev"] = self.prev.to_json()
        return data


def file_states(files: dict | None) -> dict[str, FileState]:
    """{file name: FileState} of what `SyncedFolder.files` holds (a file the last pass never saw is left out)."""
    return {name: FileState.from_json(data) for name, data in (files or {}).items() if data}


def stored_files(states: dict[str, FileState]) -> dict:
    """`SyncedFolder.files` for these states."""
    return {name: state.to_json() for name, state in states.items()}


def stored_stats(states: dict[str, FileState]) -> dict:
    """`SyncedFolder.stats`: the stats alone, of every file and of every old inode kept."""
    stats: dict[str, Stat | None] = {name: state.stat for name, state in states.items()}
    for name, state in states.items():
        if state.prev:
            stats[f"{name} prev"] = state.prev.stat
    return stats


# --- the files on disk -----------------------------------------------------------------------


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def decode(data: bytes, where: str) -> str:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise SyncError(f"{where} is not UTF-8 text (byte {exc.start})") from None
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text


def prev_path(folder_path: Path, name: str) -> Path:
    return Path(folder_path) / f".{name}.sync-prev"


def drop_prev(folder_path: Path, name: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        prev_path(folder_path, name).unlink()


def _stat(path: Path) -> Stat | None:
    try:
        st = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return None
    return [st.st_ino, st.st_size, st.st_mtime_ns]


def unchanged(synced, path: Path, version: int | None) -> bool:
    """True when nothing needs reading: every file and kept old inode as the last pass left it."""
    stats = synced.stats
    if synced.memory_version != version or not stats:
        return False
    for name in FILES:
        if _stat(path / name) != stats.get(name):
            return False
        prev = stats.get(f"{name} prev")
        if prev and _stat(prev_path(path, name)) != prev:
            return False
    return True


def fstat(fd: int) -> Stat:
    st = os.fstat(fd)
    return [st.st_ino, st.st_size, st.st_mtime_ns]


def read_fd(fd: int) -> bytes:
    chunks, offset = [], 0
    while chunk := os.pread(fd, 1 << 20, offset):
        chunks.append(chunk)
        offset += len(chunk)
    return b"".join(chunks)


@dataclass
class FileRead:
    """One file as this attempt read it, through a descriptor kept open until the replace."""

    name: str
    path: Path
    fd: int | None
    data: bytes
    text: str
    stat: Stat | None = None  # taken before the read: a write after it always shows as a different stat

    @classmethod
    def open(cls, path: Path, where: str) -> "FileRead":
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except FileNotFoundError:
            return cls(path.name, path, None, b"", "")
        except OSError as exc:
            raise SyncError(f"cannot read {where}: {exc.strerror}") from None
        while True:
            stat = fstat(fd)
            data = read_fd(fd)
            if len(data) == stat[1]:
                break  # else written to while being read: read again
        return cls(path.name, path, fd, data, decode(data, where), stat)

    def still_there(self) -> bool:
        """The path still names the inode read, and it holds exactly the bytes read."""
        if self.fd is None:
            return not os.path.lexists(self.path)
        try:
            same = os.stat(self.path, follow_symlinks=False).st_ino == os.fstat(self.fd).st_ino
        except FileNotFoundError:
            return False
        return same and os.fstat(self.fd).st_size == len(self.data) and read_fd(self.fd) == self.data

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def replace_file(read: FileRead, data: bytes, folder_path: Path) -> tuple[Stat, Stat | None, bytes]:
    """Replace the file with data if it still holds what was read (else Raced).

    Returns (the new file's stat as written, the old inode's stat, what the old inode held after the
    replace). Stats are taken before anyone else can write after them, so any later write shows.
    """
    path = read.path
    fd, tmp = tempfile.mkstemp(dir=folder_path, prefix=f".{read.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
            written = fstat(handle.fileno())
        if not read.still_there():
            raise Raced()
        if read.fd is not None:
            drop_prev(folder_path, read.name)
            os.link(path, prev_path(folder_path, read.name))  # a late O_APPEND write is found next pass
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    if read.fd is None:
        return written, None, b""
    return written, fstat(read.fd), read_fd(read.fd)
