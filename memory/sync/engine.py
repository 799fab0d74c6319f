"""One sync pass over a Night Watch agents folder: take in what Night Watch wrote, write out what people decided.

Per memory folder (`<root>/<persona>/memories/<project>/`, archived personas under `.archived/`),
the pass compares each file with what the last pass left in it (`SyncedFolder.files`):

- **Unchanged** (same inode, size and mtime, memory at the same version): nothing is read.
- **Appended** (the file still starts with what was left): only the lines after it are new.
- **Rewritten** (Night Watch's compaction or promotion): the lines are diffed with what was left.
  A line that went away stood for a lesson: when nobody changed that lesson since, Night Watch's
  decision is recorded (the lesson deleted, the rewritten line added) in a batch by the "Night Watch
  files" actor, revertible like any other; when a person changed it (edited, deleted, re-categorised),
  both texts go to the review queue as a file conflict and neither is written over.

New lines are matched to stored lessons as import matches them (tier, category, text and, when
the file gives one, date; any status, so a deleted or superseded lesson does not come back),
leaving out the lessons the file's own other lines already stand for: a line Night Watch wrote
twice is two lessons.

Then every file whose content should change is replaced, atomically, only if it still holds what
the pass read: checked through the descriptor the pass read it with, at the last moment. The old
inode stays linked as `.<file>.sync-prev`; whatever an O_APPEND writer that opened it before the
replace adds to it is found right after the replace (and again by the next pass) and taken in.
"""

import difflib
import hashlib
import os
import tempfile
from dataclasses import dataclass, field
from datetime import UTC, datetime
from datetime import timezone as dt_timezone
from pathlib import Path

from django.db import OperationalError, transaction
from django.utils import timezone

from memory import services
from memory.formats.importer import memory_import_tree, stored_line_counts, unmatched_lines
from memory.formats.lines import lesson_line, render_core, render_working, section_header, working_order
from memory.formats.nightwatch import (
    ARCHIVED_DIR,
    CORE_FILE,
    LEGACY_FILE,
    MEMORIES_DIR,
    WORKING_FILE,
    Tree,
    TreeError,
    parse_core,
    parse_working,
    read_memory_folder,
    split_archived_folder,
)
from memory.models import ActorType, ChangeBatch, Lesson, LessonStatus, Memory, Tier
from memory.selectors import active_lesson_rows
from memory.sync.models import SyncConflict, SyncedFolder
from memory.sync.services import sync_failure_announce

ACTOR = services.Actor(ActorType.SYSTEM, label="Night Watch files")
FILES = (CORE_FILE, WORKING_FILE)
TIERS = {CORE_FILE: Tier.CORE, WORKING_FILE: Tier.WORKING}
ATTEMPTS = 5  # a folder whose file keeps changing under the pass is left for the next pass after this many


class SyncError(Exception):
    """This folder cannot be synced now; the message says why. Nothing of it was written."""


class _Raced(Exception):
    """The file changed between the read and the replace: read it again."""


@dataclass
class FolderResult:
    folder: str
    persona: str = ""
    project: str = ""
    taken_in: int = 0
    removed: int = 0  # lessons Night Watch removed or rewrote, recorded as its batch
    written: list = field(default_factory=list)  # file names replaced
    conflicts: int = 0  # new conflicts this pass
    waiting: int = 0  # conflicts waiting for a person
    skipped: bool = False  # unchanged: only stat-ed
    retries: int = 0  # attempts read again because a file changed under them
    error: str = ""
    batch_ids: list = field(default_factory=list)


@dataclass
class PassReport:
    root: Path
    folders: list = field(default_factory=list)

    @property
    def failed(self):
        return [f for f in self.folders if f.error]


# --- keys of lines ---------------------------------------------------------------------------


def _key(tier, body):
    return hashlib.blake2b(f"{tier}\0{body}".encode(), digest_size=8).hexdigest()


def _body(unparsed, category, text, ref_texts):
    return f"U\0{text}" if unparsed else f"{category}\0{text}\0{' '.join(ref_texts)}"


def parsed_key(line):
    """What identifies a file line: its tier, category, text and refs (not its date or section)."""
    return _key(line.tier, _body(line.unparsed, line.category, line.text, [r.as_text() for r in line.refs]))


def lesson_key(lesson, refs):
    return _key(lesson.tier, _body(lesson.unparsed, lesson.category, lesson.text, [r.as_text() for r in refs]))


def _snapshot_key(tier, snap):
    return _key(tier, _body(False, snap["category"], snap["text"], snap.get("refs", ())))


def _snapshot_line(snap):
    refs = snap.get("refs") or ()
    line = f"- [{snap['category']}] {snap['text']}" if snap["category"] else f"- {snap['text']}"
    return line + (f" (ref: {', '.join(refs)})" if refs else "")


def _parse(name, text):
    return parse_core(text, name) if name == CORE_FILE else parse_working(text, name)


def _sha(data):
    return hashlib.sha256(data).hexdigest()


def _decode(data, where):
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise SyncError(f"{where} is not UTF-8 text (byte {exc.start})") from None
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text


# --- the folder walk -------------------------------------------------------------------------


@dataclass
class FoundFolder:
    rel: str
    path: Path
    persona_name: str
    project_folder: str
    persona_folder: str = ""
    archived_at: datetime | None = None
    archived_folder: str = ""


def _dirs(path):
    try:
        with os.scandir(path) as it:
            return sorted(
                (e for e in it if not e.name.startswith(".") and e.is_dir(follow_symlinks=False)), key=lambda e: e.name
            )
    except FileNotFoundError:
        return []


def _memory_dirs(persona_path, rel_prefix, **who):
    for project in _dirs(Path(persona_path) / MEMORIES_DIR):
        yield FoundFolder(
            rel=f"{rel_prefix}/{MEMORIES_DIR}/{project.name}",
            path=Path(project.path),
            project_folder=project.name,
            **who,
        )


def find_folders(root):
    """Every memory folder under root (links are not followed), without reading a file."""
    root = Path(root)
    found = []
    for persona in _dirs(root):
        found += _memory_dirs(persona.path, persona.name, persona_name=persona.name, persona_folder=persona.name)
    for persona in _dirs(root / ARCHIVED_DIR):
        name, at = split_archived_folder(persona.name)
        found += _memory_dirs(
            persona.path,
            f"{ARCHIVED_DIR}/{persona.name}",
            persona_name=name,
            archived_at=at or datetime(1970, 1, 1, tzinfo=UTC),
            archived_folder=persona.name,
        )
    return found


# --- state of files on disk ------------------------------------------------------------------


def _prev_path(folder_path, name):
    return Path(folder_path) / f".{name}.sync-prev"


def _stat(path):
    try:
        st = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return None
    return [st.st_ino, st.st_size, st.st_mtime_ns]


def unchanged(synced, path, version):
    """True when nothing needs reading: every file and kept old inode as the last pass left it."""
    stats = synced.stats
    if synced.memory_version != version or not stats:
        return False
    for name in FILES:
        if _stat(path / name) != stats.get(name):
            return False
        prev = stats.get(f"{name} prev")
        if prev and _stat(_prev_path(path, name)) != prev:
            return False
    return True


@dataclass
class _Read:
    """One file as this attempt read it, through a descriptor kept open until the replace."""

    name: str
    path: Path
    fd: int | None
    data: bytes
    text: str
    stat: list | None = None  # taken before the read: a write after it always shows as a different stat

    @classmethod
    def open(cls, path, where):
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except FileNotFoundError:
            return cls(path.name, path, None, b"", "")
        except OSError as exc:
            raise SyncError(f"cannot read {where}: {exc.strerror}") from None
        while True:
            stat = _fstat(fd)
            data = _read_fd(fd)
            if len(data) == stat[1]:
                break  # else written to while being read: read again
        return cls(path.name, path, fd, data, _decode(data, where), stat)

    def still_there(self):
        """The path still names the inode read, and it holds exactly the bytes read."""
        if self.fd is None:
            return not os.path.lexists(self.path)
        try:
            same = os.stat(self.path, follow_symlinks=False).st_ino == os.fstat(self.fd).st_ino
        except FileNotFoundError:
            return False
        return same and os.fstat(self.fd).st_size == len(self.data) and _read_fd(self.fd) == self.data

    def close(self):
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def _fstat(fd):
    st = os.fstat(fd)
    return [st.st_ino, st.st_size, st.st_mtime_ns]


def _read_fd(fd):
    chunks, offset = [], 0
    while chunk := os.pread(fd, 1 << 20, offset):
        chunks.append(chunk)
        offset += len(chunk)
    return b"".join(chunks)


# --- one attempt on one folder ---------------------------------------------------------------


@dataclass
class _Intake:
    """What the files say changed since the last pass, per file."""

    added: list = field(default_factory=list)  # ParsedLine not standing for a kept lesson
    removed: list = field(default_factory=list)  # (base entry, paired added line or None)
    kept: list = field(default_factory=list)  # base entries whose line is still there
    loose: list = field(default_factory=list)  # lines from a kept old inode rewritten in the window


def _diff(name, read, state, intake):
    """Fill intake from one file against what the last pass left in it."""
    base = (state or {}).get("lines", [])
    size, sha = (state or {}).get("size", 0), (state or {}).get("sha", "")
    data = read.data
    if state and len(data) == size and _sha(data) == sha:
        intake.kept += base
        return
    if read.fd is None:
        intake.kept += base  # a file gone altogether is written again: losing it is no one's decision
        return
    lines = [l for l in _parse(name, read.text) if not l.rejected or _reject(l)]
    ends_clean = size == 0 or data[size - 1 : size] == b"\n"
    if state and len(data) > size and ends_clean and _sha(data[:size]) == sha:
        known = data[:size].count(b"\n")
        intake.kept += base
        intake.added += [l for l in lines if l.line_no > known]
        return
    keys = [parsed_key(l) for l in lines]
    matcher = difflib.SequenceMatcher(None, [b[0] for b in base], keys, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            intake.kept += base[i1:i2]
            continue
        gone, new = base[i1:i2], lines[j1:j2]
        for n, entry in enumerate(gone):
            intake.removed.append((entry, new[n] if op == "replace" and n < len(new) else None))
        paired = len(gone) if op == "replace" else 0
        intake.added += new[paired:]


def _reject(line):
    raise SyncError(f"{line.where}: {line.problem}; fix or remove the line, then sync again")


def _prev_tail(folder_path, name, prev, intake):
    """What was added to the old inode kept after the last replace (an O_APPEND writer that had it open)."""
    path = _prev_path(folder_path, name)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return
    size, sha = prev["size"], prev["sha"]
    if len(data) == size and _sha(data) == sha:
        return
    text = _decode(data, f"{path.parent.name}/{path.name}")
    lines = [l for l in _parse(name, text) if not l.rejected or _reject(l)]
    if len(data) > size and _sha(data[:size]) == sha and (size == 0 or data[size - 1 : size] == b"\n"):
        known = data[:size].count(b"\n")
        intake.added += [l for l in lines if l.line_no > known]
    else:
        intake.loose += lines  # rewritten in place in the window: every line, matched like an import


class _Batch:
    """The pass's "Night Watch files" batch of one memory, made when first needed."""

    def __init__(self, memory, rel):
        self.memory, self.rel, self.batch = memory, rel, None

    def get(self):
        if self.batch is None:
            self.batch = services.batch_create(
                memory=self.memory,
                kind=ChangeBatch.Kind.SYNC,
                actor=ACTOR,
                label=f"Sync of {self.rel}",
                reason="What Night Watch wrote to the memory's files since the last sync",
            )
        return self.batch


def _line_text(lesson, refs):
    return lesson_line(lesson, refs)


class _FileLine:
    """A conflict's file line standing in a lesson's place while a person decides."""

    def __init__(self, lesson, raw):
        for name in ("id", "tier", "lesson_date", "section", "undated", "section_heading", "protected", "relevance"):
            setattr(self, name, getattr(lesson, name))
        self.unparsed, self.raw_line, self.text, self.category = True, raw, raw.strip(), ""
        if not self.undated and not self.section_heading:
            self.section_heading = section_header(lesson.lesson_date, "" if lesson.unparsed else lesson.category)


def _render(memory, conflicts):
    """{file: (text, [[key, lesson id, conflict id]…])} of what the files should hold now."""
    rows = {lesson.id: (lesson, refs) for lesson, refs in active_lesson_rows(memory)}
    entries = {}
    for conflict in conflicts:
        lesson = rows.get(conflict.lesson_id, (None,))[0]
        if conflict.file_line:
            stand_in = _FileLine(lesson or conflict.lesson, conflict.file_line)
            parsed = _parse(conflict.file_name, conflict.file_line)
            rows[conflict.lesson_id] = (stand_in, [])
            entries[conflict.lesson_id] = [parsed_key(parsed[0]) if parsed else "", conflict.lesson_id, conflict.pk]
        else:
            rows.pop(conflict.lesson_id, None)
    out = {}
    for name in FILES:
        tier = TIERS[name]
        items = sorted((item for item in rows.values() if item[0].tier == tier), key=lambda item: item[0].id)
        if tier == Tier.WORKING:
            items = working_order(items)
            text = render_working(items)
        else:
            text = render_core(items)
        lines = [entries.get(lesson.id) or [lesson_key(lesson, refs), lesson.id, 0] for lesson, refs in items]
        out[name] = (text, lines)
    return out


def _write(read, data, folder_path):
    """Replace the file with data if it still holds what was read.

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
            written = _fstat(handle.fileno())
        if not read.still_there():
            raise _Raced()
        prev = _prev_path(folder_path, read.name)
        if read.fd is not None:
            try:
                prev.unlink()
            except FileNotFoundError:
                pass
            os.link(path, prev)  # the old inode stays reachable: a late O_APPEND write is found next pass
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    if read.fd is None:
        return written, None, b""
    old_stat = _fstat(read.fd)
    return written, old_stat, _read_fd(read.fd)


@transaction.atomic
def _attempt(synced, path, result, today):
    memory = Memory.objects.select_for_update().select_related("persona", "project").get(pk=synced.memory_id)
    synced = SyncedFolder.objects.select_for_update().get(pk=synced.pk)
    reads = {}
    try:
        for name in FILES:
            reads[name] = _Read.open(path / name, f"{synced.folder}/{name}")
        return _attempt_locked(synced, memory, path, reads, result, today)
    finally:
        for read in reads.values():
            read.close()


def _attempt_locked(synced, memory, path, reads, result, today):
    files = synced.files or {}
    intake = _Intake()
    for name in FILES:
        _diff(name, reads[name], files.get(name), intake)
        if prev := (files.get(name) or {}).get("prev"):
            _prev_tail(path, name, prev, intake)
    pending = {
        c.lesson_id: c
        for c in SyncConflict.objects.filter(memory=memory, status=SyncConflict.Status.PENDING).select_related("lesson")
    }
    by_id = {c.pk: c for c in pending.values()}
    batch = _Batch(memory, synced.folder)
    added, new_conflicts, held_now = [], [], set()
    if intake.removed:
        ids = [entry[1] for entry, _ in intake.removed]
        lessons = {l.pk: l for l in Lesson.objects.filter(pk__in=ids).prefetch_related("refs")}
        for entry, paired in intake.removed:
            key, lesson_id, conflict_id = entry
            conflict = by_id.get(conflict_id)
            if conflict is not None:  # Night Watch changed its side of a waiting conflict again
                if conflict.file_line:  # kept with the conflict: a line only it held is never dropped
                    conflict.earlier_file_lines = [*conflict.earlier_file_lines, conflict.file_line]
                conflict.file_line = paired.raw_line if paired else ""
                conflict.save(update_fields=["file_line", "earlier_file_lines"])
                continue
            lesson = lessons.get(lesson_id)
            if lesson is None or lesson_id in pending:
                added += [paired] if paired else []
                continue
            refs = list(lesson.refs.all())
            now_key = lesson_key(lesson, refs)
            active = lesson.status == LessonStatus.ACTIVE
            if active and paired is not None and parsed_key(paired) == now_key:
                held_now.add(lesson.pk)
                continue  # the file already says what the lesson says now
            people_changed = not active or now_key != key
            if not active and paired is None:
                continue  # both sides took it away
            if people_changed or lesson.protected:
                conflict = SyncConflict.objects.create(
                    memory=memory,
                    folder=synced,
                    lesson=lesson,
                    file_name=_file_of(lesson),
                    base_line=_base_line(lesson, refs, key),
                    file_line=paired.raw_line if paired else "",
                )
                pending[lesson.pk] = conflict
                new_conflicts.append(conflict)
                continue
            services.lesson_delete(
                lesson=lesson,
                actor=ACTOR,
                batch=batch.get(),
                bump=False,
                reason="Night Watch removed or rewrote the line",
            )
            result.removed += 1
            added += [paired] if paired else []
    added += intake.added
    held = {entry[1] for entry in intake.kept} | held_now
    taken = []
    if added:
        taken += unmatched_lines(added, *stored_line_counts(memory, exclude=held))
    if intake.loose:
        taken += unmatched_lines(intake.loose, *stored_line_counts(memory))
    if taken:
        section, sections = services.next_section(memory), {}
        for line in taken:
            if line.tier == Tier.WORKING:
                number = sections.setdefault((line.source, line.section), section + len(sections))
            else:
                number = section
            services.lesson_create_from_file(memory=memory, line=line, batch=batch.get(), section=number, today=today)
        result.taken_in += len(taken)
    if batch.batch is not None:
        services.memory_bump_version(memory)
        result.batch_ids.append(batch.batch.pk)
    result.conflicts += len(new_conflicts)
    rendered = _render(memory, list(pending.values()))
    new_files = {}
    raced = False
    for name in FILES:
        text, lines = rendered[name]
        data = text.encode("utf-8")
        read = reads[name]
        state = dict(files.get(name) or {})
        prev = state.get("prev")
        stat = read.stat
        if read.data != data:
            stat, old_stat, after = _write(read, data, path)
            result.written.append(name)
            if read.fd is not None:
                prev = {"size": len(read.data), "sha": _sha(read.data), "stat": old_stat}
                raced = raced or after != read.data
            else:
                prev = None
        elif prev:
            _drop_prev(path, name)  # its late writes were taken in above; one pass is all the window needs
            prev = None
        new_files[name] = {
            "stat": stat,
            "size": len(data),
            "sha": _sha(data),
            "lines": lines,
            **({"prev": prev} if prev else {}),
        }
    memory.refresh_from_db(fields=["version"])
    synced.files = new_files
    synced.stats = {
        **{name: state["stat"] for name, state in new_files.items()},
        **{f"{name} prev": state["prev"]["stat"] for name, state in new_files.items() if "prev" in state},
    }
    synced.memory_version = memory.version
    synced.synced_at = timezone.now()
    synced.error = ""
    synced.save()
    result.waiting = len(pending)
    return not raced


def _file_of(lesson):
    return CORE_FILE if lesson.tier == Tier.CORE else WORKING_FILE


def _base_line(lesson, refs, key):
    """The line the files held for this lesson after the last pass (the lesson's text then)."""
    if lesson_key(lesson, refs) == key:
        return _line_text(lesson, refs)
    if lesson.unparsed:
        return lesson.raw_line
    for after in lesson.changes.order_by("-id").values_list("after", flat=True)[:50]:
        if after and _snapshot_key(lesson.tier, after) == key:
            return _snapshot_line(after)
    return ""


def _drop_prev(path, name):
    try:
        _prev_path(path, name).unlink()
    except FileNotFoundError:
        pass


def sync_one(synced, path, result, *, today=None):
    """Attempts on one known folder until the files hold what the store says (or give up for this pass).

    An attempt that found the file changed before its replace is rolled back whole and read again;
    one whose replace raced an append to the old inode is kept, and the next attempt takes that in.
    """
    for _ in range(ATTEMPTS):
        delta = FolderResult(folder=result.folder)
        try:
            done = _attempt(synced, path, delta, today or timezone.localdate())
        except (_Raced, OperationalError):
            # The file changed before the replace, or the database gave up a lock (a person's edit
            # holding the lesson while waiting for the memory this pass holds): all rolled back, again.
            result.retries += 1
            continue
        result.retries += 0 if done else 1
        result.taken_in += delta.taken_in
        result.removed += delta.removed
        result.conflicts += delta.conflicts
        result.waiting = delta.waiting
        result.written += [n for n in delta.written if n not in result.written]
        result.batch_ids += delta.batch_ids
        if done:
            return True
    return False


# --- a pass ----------------------------------------------------------------------------------


def _first_import(root, found, report):
    """Folders never synced: imported in bulk (creating personas, projects, memories as import does)."""

    tree = Tree(root=root)
    for f in found:
        try:
            tree.memories.append(
                read_memory_folder(
                    f.path,
                    root,
                    f.persona_name,
                    f.project_folder,
                    f.archived_at,
                    f.archived_folder,
                    persona_folder=f.persona_folder,
                    tree=tree,
                )
            )
        except TreeError as exc:
            report[f.rel] = str(exc).replace("; nothing was imported", "")
    rejected = {m.path: m.rejected for m in tree.memories if m.rejected}
    tree.memories = [m for m in tree.memories if m.path not in rejected]
    for f in found:
        if f.path in rejected:
            line = rejected[f.path][0]
            report[f.rel] = f"{line.where}: {line.problem}; fix or remove the line, then sync again"
    if not tree.memories:
        return {}
    imported = memory_import_tree(tree=tree, actor=ACTOR)
    ordered = sorted(tree.memories, key=lambda m: m.archived_at is not None)  # the order import reports in
    return {m.path: (r.memory_id, r.added) for m, r in zip(ordered, imported.memories)}


def sync_pass(root, *, today=None):
    """One pass over every memory folder under root. Returns a PassReport (per-folder errors in it)."""
    root = Path(root).expanduser().resolve()
    if not root.is_dir():
        raise TreeError(f"{root} is not a folder")
    report = PassReport(root=root)
    found = find_folders(root)
    known = {s.folder: s for s in SyncedFolder.objects.filter(root=str(root)).defer("files")}
    versions = dict(Memory.objects.filter(pk__in=[s.memory_id for s in known.values()]).values_list("id", "version"))
    new = [f for f in found if f.rel not in known and _has_files(f.path)]
    errors, added = {}, {}
    if new:
        try:
            memories = _first_import(root, new, errors)
        except TreeError as exc:
            memories = {}
            for f in new:
                errors.setdefault(f.rel, str(exc))
        for f in new:
            if f.path in memories:
                memory_id, added[f.rel] = memories[f.path]
                known[f.rel] = SyncedFolder.objects.create(root=str(root), folder=f.rel, memory_id=memory_id)
                versions[memory_id] = None
    for f in found:
        result = FolderResult(folder=f.rel, taken_in=added.get(f.rel, 0))
        report.folders.append(result)
        if f.rel in errors:
            result.error = errors[f.rel]
            continue
        synced = known.get(f.rel)
        if synced is None:
            continue  # no memory files yet
        if unchanged(synced, f.path, versions.get(synced.memory_id)):
            result.skipped = True
            continue
        try:
            if not sync_one(synced, f.path, result, today=today):
                result.error = "the files kept changing during the pass; the next pass goes on from here"
        except (SyncError, OSError) as exc:
            result.error = str(exc)
            with transaction.atomic():
                SyncedFolder.objects.filter(pk=synced.pk).update(error=result.error[:2000])
                if not synced.error:
                    sync_failure_announce(memory_id=synced.memory_id, folder=f.rel, error=result.error)
    _name_results(report, known)
    return report


def _has_files(path):
    return any((path / name).is_file() for name in (CORE_FILE, WORKING_FILE, LEGACY_FILE))


def _name_results(report, known):
    ids = {s.folder: s.memory_id for s in known.values()}
    names = {
        m.pk: (m.persona.name, m.project.slug)
        for m in Memory.objects.filter(pk__in=ids.values()).select_related("persona", "project")
    }
    for result in report.folders:
        result.persona, result.project = names.get(ids.get(result.folder), ("", ""))
