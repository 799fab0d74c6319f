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

from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

from django.db import OperationalError, transaction
from django.db.models import Max
from django.utils import timezone

from memory import services
from memory.formats.importer import stored_line_counts, unmatched_lines
from memory.formats.nightwatch import ParsedLine, TreeError
from memory.models import ActorType, ChangeBatch, Lesson, LessonStatus, Memory, Tier
from memory.sync.changes import (
    Intake,
    Removal,
    Rendered,
    base_line,
    file_changes,
    file_of,
    lesson_key,
    parsed_key,
    render_files,
)
from memory.sync.files import (
    FILES,
    FileRead,
    FileState,
    KeptInode,
    Raced,
    SyncError,
    drop_prev,
    file_states,
    sha,
    stored_files,
    stored_stats,
    unchanged,
)
from memory.sync.files import replace_file as _write
from memory.sync.folders import FoundFolder, find_folders, has_files, import_new_folders
from memory.sync.models import SyncConflict, SyncedFolder
from memory.sync.services import sync_failure_announce

__all__ = ["FolderResult", "PassReport", "SyncError", "find_folders", "sync_one", "sync_pass"]

ACTOR = services.Actor(ActorType.SYSTEM, label="Night Watch files")
ATTEMPTS = 5  # a folder whose file keeps changing under the pass is left for the next pass after this many


@dataclass
class FolderResult:
    folder: str
    persona: str = ""
    project: str = ""
    taken_in: int = 0
    removed: int = 0  # lessons Night Watch removed or rewrote, recorded as its batch
    written: list[str] = field(default_factory=list)  # file names replaced
    conflicts: int = 0  # new conflicts this pass
    waiting: int = 0  # conflicts waiting for a person
    skipped: bool = False  # unchanged: only stat-ed
    retries: int = 0  # attempts read again because a file changed under them
    error: str = ""
    batch_ids: list[int] = field(default_factory=list)


@dataclass
class PassReport:
    root: Path
    folders: list[FolderResult] = field(default_factory=list)

    @property
    def failed(self) -> list[FolderResult]:
        return [f for f in self.folders if f.error]


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


@dataclass
class _Attempt:
    """One attempt on one folder, its memory and folder row locked, its files open."""

    synced: SyncedFolder
    memory: Memory
    path: Path
    reads: dict[str, FileRead]
    result: FolderResult
    today: date
    batch: _Batch
    pending: dict[int, SyncConflict] = field(default_factory=dict)  # lesson id: its waiting conflict


@dataclass
class _Settled:
    """What the lines Night Watch removed or rewrote leave to take in."""

    lines: list[ParsedLine] = field(default_factory=list)  # rewritten lines to take in like new ones
    held: set[int] = field(default_factory=set)  # lessons a rewritten line says again as they are now


# --- one attempt on one folder ---------------------------------------------------------------


@transaction.atomic
def _attempt(synced, path, result, today):
    memory = Memory.objects.select_for_update().select_related("persona", "project").get(pk=synced.memory_id)
    synced = SyncedFolder.objects.select_for_update().get(pk=synced.pk)
    reads = {}
    try:
        for name in FILES:
            reads[name] = FileRead.open(path / name, f"{synced.folder}/{name}")
        attempt = _Attempt(synced, memory, path, reads, result, today, _Batch(memory, synced.folder))
        return _attempt_locked(attempt)
    finally:
        for read in reads.values():
            read.close()


def _attempt_locked(attempt):
    """Take in what the files say changed, then write them out from the store. False when a write raced."""
    states = file_states(attempt.synced.files)
    intake = file_changes(attempt.path, attempt.reads, states)
    attempt.pending = _waiting_conflicts(attempt.memory)
    settled = _settle_removed(attempt, intake.removed)
    _take_in(attempt, intake, settled)
    if attempt.batch.batch is not None:
        services.memory_bump_version(attempt.memory)
        attempt.result.batch_ids.append(attempt.batch.batch.pk)
    new_states, raced = _write_files(attempt, states, render_files(attempt.memory, list(attempt.pending.values())))
    _remember(attempt, new_states)
    attempt.result.waiting = len(attempt.pending)
    return not raced


def _waiting_conflicts(memory):
    """{lesson id: its waiting conflict}."""
    waiting = SyncConflict.objects.filter(memory=memory, status=SyncConflict.Status.PENDING).select_related("lesson")
    return {conflict.lesson_id: conflict for conflict in waiting}


# --- lines Night Watch removed or rewrote ------------------------------------------------------


def _settle_removed(attempt, removed):
    """Settle every line the last pass left that Night Watch removed or rewrote since."""
    settled = _Settled()
    if not removed:
        return settled
    waiting = {conflict.pk: conflict for conflict in attempt.pending.values()}
    ids = [removal.line.lesson_id for removal in removed]
    lessons = {lesson.pk: lesson for lesson in Lesson.objects.filter(pk__in=ids).prefetch_related("refs")}
    for removal in removed:
        conflict = waiting.get(removal.line.conflict_id)
        if conflict is not None:
            _conflict_rewritten(conflict, removal.replacement)
            continue
        lesson = lessons.get(removal.line.lesson_id)
        if lesson is None or lesson.pk in attempt.pending:
            settled.lines += [removal.replacement] if removal.replacement else []
            continue
        _settle_lesson(attempt, removal, lesson, settled)
    return settled


def _conflict_rewritten(conflict, replacement):
    """Night Watch changed its side of a waiting conflict again: the conflict takes its new line."""
    if conflict.file_line:  # kept with the conflict: a line only it held is never dropped
        conflict.earlier_file_lines = [*conflict.earlier_file_lines, conflict.file_line]
    conflict.file_line = replacement.raw_line if replacement else ""
    conflict.save(update_fields=["file_line", "earlier_file_lines"])


def _settle_lesson(attempt, removal: Removal, lesson, settled):
    """The lesson a removed line stood for: kept, in conflict, or deleted as Night Watch decided."""
    refs = list(lesson.refs.all())
    now_key = lesson_key(lesson, refs)
    active = lesson.status == LessonStatus.ACTIVE
    replacement = removal.replacement
    if active and replacement is not None and parsed_key(replacement) == now_key:
        settled.held.add(lesson.pk)  # the file already says what the lesson says now
        return
    if not active and replacement is None:
        return  # both sides took it away
    people_changed = not active or now_key != removal.line.key
    if people_changed or lesson.protected:
        attempt.pending[lesson.pk] = SyncConflict.objects.create(
            memory=attempt.memory,
            folder=attempt.synced,
            lesson=lesson,
            file_name=file_of(lesson),
            base_line=base_line(lesson, refs, removal.line.key),
            file_line=replacement.raw_line if replacement else "",
        )
        attempt.result.conflicts += 1
        return
    services.lesson_delete(
        lesson=lesson,
        actor=ACTOR,
        batch=attempt.batch.get(),
        bump=False,
        reason="Night Watch removed or rewrote the line",
    )
    attempt.result.removed += 1
    settled.lines += [replacement] if replacement else []


# --- new lines -------------------------------------------------------------------------------


def _take_in(attempt, intake: Intake, settled: _Settled):
    """Store the lines no lesson stands for yet, matched as import matches them."""
    memory = attempt.memory
    added = settled.lines + intake.added
    held = {line.lesson_id for line in intake.kept} | settled.held
    taken = []
    if added:
        taken += unmatched_lines(added, *stored_line_counts(memory, exclude=held))
    if intake.loose:
        taken += unmatched_lines(intake.loose, *stored_line_counts(memory))
    if not taken:
        return
    sections: dict[tuple[str, int], int] = {}
    section = services.next_section(memory)
    for line in taken:
        if line.tier == Tier.WORKING:
            number = sections.setdefault((line.source, line.section), section + len(sections))
        else:
            number = section
        services.lesson_create_from_file(
            memory=memory, line=line, batch=attempt.batch.get(), section=number, today=attempt.today
        )
    attempt.result.taken_in += len(taken)


# --- the files written out -------------------------------------------------------------------


def _write_files(attempt, states, rendered: dict[str, Rendered]):
    """Replace every file whose content should change. Returns ({file: its new FileState}, whether a write raced)."""
    new_states, raced = {}, False
    for name in FILES:
        read, want = attempt.reads[name], rendered[name]
        data = want.text.encode("utf-8")
        prev = states[name].prev if name in states else None
        stat = read.stat
        if read.data != data:
            stat, old_stat, after = _write(read, data, attempt.path)
            attempt.result.written.append(name)
            if read.fd is not None:
                prev = KeptInode(len(read.data), sha(read.data), old_stat)
                raced = raced or after != read.data
            else:
                prev = None
        elif prev:
            drop_prev(attempt.path, name)  # its late writes were taken in above; one pass is all the window needs
            prev = None
        new_states[name] = FileState(stat=stat, size=len(data), sha=sha(data), lines=want.lines, prev=prev)
    return new_states, raced


def _remember(attempt, new_states):
    """The folder row keeps what the files hold now and the memory's version they were written at."""
    synced, memory = attempt.synced, attempt.memory
    memory.refresh_from_db(fields=["version"])
    synced.files = stored_files(new_states)
    synced.stats = stored_stats(new_states)
    synced.memory_version = memory.version
    synced.synced_at = timezone.now()
    synced.error = ""
    synced.save()


def sync_one(synced: SyncedFolder, path: Path, result: FolderResult, *, today: date | None = None) -> bool:
    """Attempts on one known folder until the files hold what the store says (or give up for this pass).

    An attempt that found the file changed before its replace is rolled back whole and read again;
    one whose replace raced an append to the old inode is kept, and the next attempt takes that in.
    """
    for _ in range(ATTEMPTS):
        delta = FolderResult(folder=result.folder)
        try:
            done = _attempt(synced, path, delta, today or timezone.localdate())
        except (Raced, OperationalError):
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


def sync_pass(root: str | Path, *, today: date | None = None) -> PassReport:
    """One pass over every memory folder under root. Returns a PassReport (per-folder errors in it)."""
    root = Path(root).expanduser().resolve()
    if not root.is_dir():
        raise TreeError(f"{root} is not a folder")
    report = PassReport(root=root)
    found = find_folders(root)
    known = {s.folder: s for s in SyncedFolder.objects.filter(root=str(root)).defer("files")}
    versions = dict(Memory.objects.filter(pk__in=[s.memory_id for s in known.values()]).values_list("id", "version"))
    expired = _last_expiry(versions, today or timezone.localdate())
    errors, added = _first_import(root, [f for f in found if f.rel not in known and has_files(f.path)], known, versions)
    for f in found:
        result = FolderResult(folder=f.rel, taken_in=added.get(f.rel, 0))
        report.folders.append(result)
        if f.rel in errors:
            result.error = errors[f.rel]
        elif (synced := known.get(f.rel)) is not None:  # else no memory files yet
            _sync_folder(synced, f, versions, result, today, expired.get(synced.memory_id))
    _name_results(report, known)
    return report


def _first_import(root, new: list[FoundFolder], known, versions):
    """Import the folders no pass knows yet and start knowing them. Returns ({rel: error}, {rel: lessons added})."""
    errors: dict[str, str] = {}
    added: dict[str, int] = {}
    if not new:
        return errors, added
    try:
        imported = import_new_folders(root, new, errors, actor=ACTOR)
    except TreeError as exc:
        imported = {}
        for f in new:
            errors.setdefault(f.rel, str(exc))
    for f in new:
        memory_import = imported.get(f.rel)
        if memory_import is not None and (memory_id := memory_import.memory_id) is not None:
            added[f.rel] = memory_import.added
            known[f.rel] = SyncedFolder.objects.create(root=str(root), folder=f.rel, memory_id=memory_id)
            versions[memory_id] = None
    return errors, added


def _last_expiry(versions, today: date) -> dict[int, date]:
    """{memory id: the latest expires_on, today or before, of its live lessons}. A lesson leaves the
    files on its expires_on day without a new version of its memory, so a folder last written before
    that day is written again even though nothing else changed."""
    if not versions:
        return {}
    rows = (
        Lesson.objects.filter(memory_id__in=list(versions), status=LessonStatus.ACTIVE, expires_on__lte=today)
        .values("memory_id")
        .annotate(last=Max("expires_on"))
        .values_list("memory_id", "last")
    )
    return dict(rows)


def _sync_folder(synced, found: FoundFolder, versions, result, today, last_expiry=None):
    written_on = timezone.localdate(synced.synced_at) if synced.synced_at else None
    expired_since = last_expiry is not None and (written_on is None or last_expiry > written_on)
    if not expired_since and unchanged(synced, found.path, versions.get(synced.memory_id)):
        result.skipped = True
        return
    try:
        if not sync_one(synced, found.path, result, today=today):
            result.error = "the files kept changing during the pass; the next pass goes on from here"
    except (SyncError, OSError) as exc:
        result.error = str(exc)
        with transaction.atomic():
            SyncedFolder.objects.filter(pk=synced.pk).update(error=result.error[:2000])
            if not synced.error:  # it synced before: its team hears once, not at every pass
                sync_failure_announce(memory_id=synced.memory_id, folder=found.rel, error=result.error)


def _name_results(report, known):
    ids = {s.folder: s.memory_id for s in known.values()}
    names = {
        m.pk: (m.persona.name, m.project.slug)
        for m in Memory.objects.filter(pk__in=ids.values()).select_related("persona", "project")
    }
    for result in report.folders:
        result.persona, result.project = names.get(ids.get(result.folder, 0), ("", ""))
