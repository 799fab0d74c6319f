"""Import a parsed memory tree into the store.

Each memory's new lessons are written as one ChangeBatch of kind `import` (so an import can be
reverted as a unit from the history), with one `create` Change per lesson and one version bump
per memory. Lessons are bulk-inserted: an import of a whole team's memory is one transaction,
and the batches, lessons, refs and history of many folders go in together as a few statements.

Idempotence. A file line and a stored lesson are the same when they share tier, category, content
hash of the text and, when the file states it, the date (the section date in working.md, the
`(promoted …)` day in core.md). Stored lessons count in any status, so a lesson deleted or
promoted since the last import is not brought back; only lessons whose creation was reverted
(a reverted import) no longer count, so importing again redoes a reverted import. Lines are
matched as a multiset, so a bullet written twice in a file is imported twice, and importing the
same tree again adds nothing. Lines without a date (bullets before the first section header, core
lines without `(promoted …)`, unparsed lines) match a stored lesson of the same content on any
date; when added they are stored undated (the import day only orders them) and exported undated.

Folder names are kept exactly as read (spaces, dots, decomposed Unicode): Night Watch finds a
memory by its exact folder name, so export writes the same name. The project's URL slug is
derived from the folder name separately.

Unchanged folders. Each import remembers, per root and memory folder, the hash of the folder's
files and the version it left the memory at (`ImportedFolder`). When both are the same the next
time, the folder would add nothing, so it is reported as such without being parsed; any change to
the memory in between (an edit, a deletion, a revert) or to the files sends it through the full
comparison above.
"""

import gc
import re
import threading
import unicodedata
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from django.core.exceptions import ValidationError
from django.core.validators import validate_unicode_slug
from django.db import connection, transaction
from django.utils import timezone
from django.utils.text import slugify

from memory import context_cache, services
from memory.formats.nightwatch import TreeError
from memory.models import Change, ChangeBatch, ImportedFolder, Lesson, LessonStatus, Memory, content_hash
from memory.refs.services import schedule_anchoring
from memory.signals import working_lessons_added
from memory.textcheck import name_problem
from personas.models import Persona, Project

PERSONA_NAME_MAX = Persona._meta.get_field("name").max_length
PROJECT_SLUG_MAX = Project._meta.get_field("slug").max_length
PROJECT_NAME_MAX = Project._meta.get_field("name").max_length
HEADING_MAX = Lesson._meta.get_field("section_heading").max_length


@dataclass
class MemoryImport:
    persona: str
    project: str
    archived: bool = False
    created: list = field(default_factory=list)  # "persona", "project", "memory"
    core_added: int = 0
    working_added: int = 0
    already_present: int = 0
    unparsed: list = field(default_factory=list)  # ParsedLine of every unparsed line in the folder
    rejected: list = field(default_factory=list)  # lines that cannot be lessons (too long, not text)
    notes: list = field(default_factory=list)
    batch_id: int | None = None
    memory_id: int | None = None
    memory_version: int | None = None
    working_ids: list = field(default_factory=list, repr=False)
    skipped: bool = False  # unchanged since its last import: not even parsed

    @property
    def added(self):
        return self.core_added + self.working_added


@dataclass
class ImportReport:
    memories: list = field(default_factory=list)
    warnings: list = field(default_factory=list)

    @property
    def added(self):
        return sum(m.added for m in self.memories)

    @property
    def already_present(self):
        return sum(m.already_present for m in self.memories)

    @property
    def unparsed(self):
        return [line for m in self.memories for line in m.unparsed]

    @property
    def rejected(self):
        return [line for m in self.memories for line in m.rejected]


def _content_key(tier, unparsed, category, digest):
    return (tier, unparsed, category, digest)


def _line_hash(line):
    return content_hash(line.text)


def stored_line_counts(memory, *, exclude=()):
    """Counters of the lessons stored in `memory` as a file line is matched against them: by content
    (tier, unparsed, category, text hash) and, for parsed lines, by content and date.

    Every status counts (a deleted lesson's line does not come back) except a creation that was
    reverted (importing again redoes it). An active lesson in `exclude` already stands for another
    line of the file (a sync knows which), so it matches no new line.
    """
    full, content = Counter(), Counter()
    rows = (
        Lesson.objects.filter(memory=memory)
        .exclude(status=LessonStatus.DELETED, changes__action=Change.Action.CREATE, changes__reverted_by__isnull=False)
        .values_list("id", "tier", "category", "lesson_date", "content_hash", "unparsed", "status")
    )
    for pk, tier, category, day, digest, unparsed, status in rows:
        if pk in exclude and status == LessonStatus.ACTIVE:
            continue
        key = _content_key(tier, unparsed, category, digest)
        content[key] += 1
        if not unparsed:
            full[(key, day)] += 1
    return full, content


def unmatched_lines(lines, full, content):
    """The lines no stored lesson stands for, in file order. Dated lines are matched first (content
    and date), then the rest by content; each stored lesson stands for one line (the counters are
    used up as lines match)."""
    keep = [True] * len(lines)
    keyed = [(_content_key(line.tier, line.unparsed, line.category, _line_hash(line)), line) for line in lines]
    dated_first = sorted(range(len(lines)), key=lambda i: 0 if (lines[i].lesson_date and not lines[i].unparsed) else 1)
    for i in dated_first:
        key, line = keyed[i]
        if line.lesson_date and not line.unparsed:
            if full[(key, line.lesson_date)] > 0:
                full[(key, line.lesson_date)] -= 1
                content[key] -= 1
                keep[i] = False
        elif content[key] > 0:
            content[key] -= 1
            keep[i] = False
    return [line for line, k in zip(lines, keep) if k]


def select_new_lines(memory, lines):
    """The file lines not already stored in `memory` (see the module docstring), in file order, and
    how many were already there."""
    full, content = stored_line_counts(memory)
    if not full and not content:
        return list(lines), 0
    new = unmatched_lines(lines, full, content)
    return new, len(lines) - len(new)


def _persona_for(folder, report, cache):
    key = ("persona", folder.persona_name, folder.archived_folder)
    if key not in cache:
        cache[key] = _find_persona(folder, report)
    return cache[key]


def _find_persona(folder, report):
    name = folder.persona_name.strip()
    if not name or len(name) > PERSONA_NAME_MAX:
        raise TreeError(f"persona folder {name!r}: a persona name must be 1 to {PERSONA_NAME_MAX} characters")
    if problem := name_problem(name, what="persona name"):
        raise TreeError(f"persona folder {name!r}: {problem}")
    if folder.archived_at is None:
        persona = Persona.objects.filter(name__iexact=name).first()
        if persona is None:
            persona = Persona.objects.create(name=name, folder_name=_kept_name(folder.persona_folder, name))
            report.created.append("persona")
        else:
            if persona.archived_at is not None:
                report.notes.append(f"persona {persona.name} is archived here; its memory was updated all the same")
            if not persona.folder_name and _kept_name(folder.persona_folder, persona.name):
                persona.folder_name = folder.persona_folder
                persona.save(update_fields=["folder_name"])
        return persona
    persona = Persona.objects.filter(archived_folder=folder.archived_folder).first()
    if persona is not None:
        return persona
    persona = Persona.objects.filter(name__iexact=name).first()
    if persona is not None and persona.archived_at is None:
        # The name now belongs to an active persona: keep the archived one apart, under its folder name.
        name = unicodedata.normalize("NFC", folder.archived_folder)
        if len(name) > PERSONA_NAME_MAX:
            raise TreeError(f"archived folder {name!r}: a persona name must be at most {PERSONA_NAME_MAX} characters")
        persona = Persona.objects.filter(name__iexact=name).first()
    if persona is None:
        persona = Persona.objects.create(name=name, archived_at=folder.archived_at)
        report.created.append("persona")
    if not persona.archived_folder:
        # Exported back under this very folder, never under a second timestamp.
        persona.archived_folder = folder.archived_folder
        persona.save(update_fields=["archived_folder"])
    return persona


def _kept_name(folder_name, default):
    """The folder name to remember: only when it differs from what export would derive."""
    return folder_name if folder_name and folder_name != default else ""


def project_slug_for(folder_name):
    """A URL slug for a project folder: the folder name itself when it is a valid slug.

    Otherwise spaces and dots become '-' and the rest is slugified; the folder keeps its own name.
    """
    try:
        validate_unicode_slug(folder_name)
        return folder_name
    except ValidationError:
        spaced = re.sub(r"[\s.]+", "-", unicodedata.normalize("NFC", folder_name))
        return slugify(spaced, allow_unicode=True).strip("-_")


def _unused_slug(slug):
    slug = slug[:PROJECT_SLUG_MAX]
    candidate, n = slug, 1
    while Project.objects.filter(slug=candidate).exists():
        n += 1
        suffix = f"-{n}"
        candidate = slug[: PROJECT_SLUG_MAX - len(suffix)] + suffix
    return candidate


def _project_for(folder, report, cache):
    key = ("project", folder.project_folder)
    if key not in cache:
        cache[key] = _find_project(folder, report)
    return cache[key]


def _find_project(folder, report):
    """The project whose memory folder is exactly this name (Night Watch compares names exactly)."""
    folder_name = folder.project_folder
    project = (
        Project.objects.filter(folder_name=folder_name).first()
        or Project.objects.filter(folder_name="", slug=folder_name).first()
    )
    if project is not None:
        return project
    slug = project_slug_for(folder_name)
    if not slug:
        raise TreeError(f"project folder {folder_name!r} gives no usable URL slug (it needs a letter or a digit)")
    name = unicodedata.normalize("NFC", folder_name)[:PROJECT_NAME_MAX]
    earlier = Project.objects.filter(folder_name="", slug=slug, name=name).exclude(slug=folder_name).first()
    if earlier is not None:
        # Imported before folder names were kept (named after the folder, slugified): the same project.
        earlier.folder_name = folder_name
        earlier.save(update_fields=["folder_name"])
        return earlier
    slug = _unused_slug(slug)
    project = Project.objects.create(slug=slug, name=name, folder_name=_kept_name(folder_name, slug))
    report.created.append("project")
    if slug != folder_name:
        report.notes.append(
            f"project folder {folder_name!r} has the URL slug {slug!r}; it is exported under its folder name"
        )
    return project


@dataclass
class _Folder:
    """One folder on its way in: where its lines go and which of them are new."""

    folder: object
    report: MemoryImport
    memory: Memory
    lines: list
    base: int  # section of its core lines; its working sections follow


class _Writer:
    """The new lessons of many folders, written together.

    Each memory still gets its own `import` batch with one `create` change per lesson; the batches,
    lessons, refs and changes of every folder held go in as a few statements (per-folder statements
    were most of an import's database time). A folder whose memory is already held waits for a
    write first, so its lines are compared with what the earlier folder added.
    """

    MAX_LINES = 20_000  # lines held before writing: bounds one statement's payload (a few MB)

    def __init__(self, *, actor, label, today, cache):
        self.actor, self.label, self.today, self.cache = actor, label, today, cache
        self.now = timezone.now()  # every row of the import is stamped alike
        self.held, self.memories, self.lines = [], set(), 0

    def holds(self, memory):
        return memory.pk in self.memories

    def add(self, item):
        self.held.append(item)
        self.memories.add(item.memory.pk)
        self.lines += len(item.lines)
        if self.lines >= self.MAX_LINES:
            self.write()

    def write(self):
        held, self.held, self.memories, self.lines = self.held, [], set(), 0
        if not held:
            return
        batches = services.batches_create(
            [
                services.batch_build(
                    memory=item.memory,
                    kind=ChangeBatch.Kind.IMPORT,
                    actor=self.actor,
                    label=self.label,
                    reason=f"Imported from {item.folder.path}",
                )
                for item in held
            ]
        )
        today, NewLesson = self.today, services.NewLesson
        lessons = []
        for item, batch in zip(held, batches):
            memory_id, batch_id, base = item.memory.pk, batch.pk, item.base
            for line in item.lines:
                section = base if line.tier == "core" else base + 1 + line.section
                lessons.append(
                    NewLesson(
                        batch_id,
                        memory_id,
                        line.tier,
                        line.category,
                        line.text,
                        line.lesson_date or today,
                        section,
                        line.lesson_date is None,
                        line.unparsed,
                        line.raw_line if line.unparsed else "",
                        line.heading if len(line.heading) <= HEADING_MAX else "",
                        line.refs,
                    )
                )
        ids = services.lessons_bulk_create(lessons, now=self.now)
        at = 0
        for item, batch in zip(held, batches):
            report, count = item.report, len(item.lines)
            item_ids = ids[at : at + count]
            at += count
            report.batch_id = batch.pk
            report.working_ids = [pk for pk, line in zip(item_ids, item.lines) if line.tier == "working"]
            report.core_added = count - len(report.working_ids)
            report.working_added = len(report.working_ids)
            if any(line.refs for line in item.lines):
                schedule_anchoring(item.memory.pk, item.memory.project)  # bulk inserts skip the per-lesson anchoring


def _memories_of(persona, cache):
    """{project id: memory} of a persona, read once per import."""
    key = ("memories", persona.pk)
    if key not in cache:
        cache[key] = {m.project_id: m for m in Memory.objects.filter(persona=persona)}
    return cache[key]


def _resolve(folder, cache):
    """The report of a folder with its persona and project found or created, and its memory when it has one."""
    report = MemoryImport(
        persona=folder.persona_name,
        project=folder.project_folder,
        archived=folder.archived_at is not None,
        notes=list(folder.notes),
        unparsed=folder.unparsed,
        rejected=folder.rejected,
    )
    persona = _persona_for(folder, report, cache)
    project = _project_for(folder, report, cache)
    report.persona, report.project = persona.name, project.slug
    return report, persona, project


def _import_folders(folders, *, actor, label, today):
    """Import folders (active before archived) and return their reports, in the same order."""
    cache = {}
    resolved = [(folder, *_resolve(folder, cache)) for folder in folders]
    # Memories no import made yet are created together; the first of their folders reports it.
    missing = {}
    for _folder, report, persona, project in resolved:
        if project.pk not in _memories_of(persona, cache) and (persona.pk, project.pk) not in missing:
            missing[(persona.pk, project.pk)] = Memory(persona=persona, project=project)
            report.created.append("memory")
    created = Memory.objects.bulk_create(list(missing.values()))
    for memory in created:
        _memories_of(memory.persona, cache)[memory.project_id] = memory
    context_cache.memories_changed(created)  # as saved memories would (bulk creation sends no signal)
    writer = _Writer(actor=actor, label=label, today=today, cache=cache)
    fresh = {memory.pk for memory in missing.values()}  # holding nothing yet: every line is new
    reports = []
    for folder, report, persona, project in resolved:
        memory = _memories_of(persona, cache)[project.pk]
        memory.project = project
        if writer.holds(memory):
            writer.write()
        if memory.pk in fresh:
            fresh.discard(memory.pk)
            new_lines, base = folder.lessons, 1
        else:
            new_lines, report.already_present = select_new_lines(memory, folder.lessons)
            base = services.next_section(memory)
        report.memory_id, report.memory_version = memory.pk, memory.version
        if new_lines:
            writer.add(_Folder(folder, report, memory, new_lines, base))
        reports.append(report)
    writer.write()
    return reports


_FOLDER_FIELDS = (
    "folder",
    "digest",
    "memory_id",
    "memory_version",
    "lines",
    "memory__version",
    "memory__persona__name",
    "memory__persona__archived_at",
    "memory__project__slug",
)


def _imported_folders(root):
    """{folder: row} of what the last imports from this root left, with the memory as it is now."""
    return {row[0]: row for row in ImportedFolder.objects.filter(root=root).values_list(*_FOLDER_FIELDS)}


def _unchanged(folder, known):
    """The report of a folder that would add nothing (same files, memory untouched since), or None.

    Only a folder whose import said nothing beyond counts (no unparsed line, no note) is remembered,
    so a skipped folder reports exactly what importing it again would.
    """
    if known is None or not folder.digest:
        return None
    _, digest, memory_id, version_then, lines, version_now, persona, archived_at, slug = known
    archived = folder.archived_at is not None
    same_names = (
        persona.casefold() in (folder.persona_name.strip().casefold(), folder.archived_folder.casefold())
        and (archived_at is not None) == archived
        and slug == project_slug_for(folder.project_folder)
    )
    if digest != folder.digest or version_then != version_now or not same_names:
        return None
    return MemoryImport(
        persona=persona,
        project=slug,
        archived=archived,
        already_present=lines,
        memory_id=memory_id,
        memory_version=version_now,
        skipped=True,
    )


def _remember_folders(root, imported):
    now = timezone.now()
    ImportedFolder.objects.bulk_create(
        [
            ImportedFolder(
                root=root,
                folder=rel,
                memory_id=result.memory_id,
                digest=digest,
                memory_version=result.memory_version,
                lines=result.added + result.already_present,
                imported_at=now,
            )
            for rel, (digest, result) in imported.items()
        ],
        update_conflicts=True,
        unique_fields=["root", "folder"],
        update_fields=["memory", "digest", "memory_version", "lines", "imported_at"],
    )


# SQLite's default page cache (2 MB) is smaller than the index pages a team's import touches, so
# pages were written out and read back during the transaction; this much is used for an import only.
IMPORT_PAGE_CACHE_KIB = 64 * 1024


@contextmanager
def _import_page_cache():
    if connection.vendor != "sqlite":
        yield
        return
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA cache_size")
        before = int(cursor.fetchone()[0])
        cursor.execute(f"PRAGMA cache_size = -{IMPORT_PAGE_CACHE_KIB}")
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute(f"PRAGMA cache_size = {before}")


# An import makes about ten objects per line (parsed lines, refs, rows) and keeps most of them until it
# commits; none of them form reference cycles. The cyclic collector's passes over that growing heap
# cost a fifth of an import's time (a full pass each time the heap grows by a quarter), for nothing
# to free, so it is paused while an import runs. Process-wide: the first import to start pauses it
# and the last to end resumes it (only if it was running before).
_collector = threading.Lock()
_collector_holds = 0
_collector_was_enabled = False


@contextmanager
def _collector_paused():
    global _collector_holds, _collector_was_enabled
    with _collector:
        if _collector_holds == 0:
            _collector_was_enabled = gc.isenabled()
            gc.disable()
        _collector_holds += 1
    try:
        yield
    finally:
        with _collector:
            _collector_holds -= 1
            if _collector_holds == 0 and _collector_was_enabled:
                gc.enable()


def memory_import_tree(*, tree, actor, dry_run=False, notify=False):
    """Import every memory folder of a parsed tree, all or nothing.

    Active persona folders come before archived ones, so an archived folder of a name that is
    also active is kept apart from the active persona. Raises TreeError (and writes nothing)
    when a persona or project name cannot be stored.

    Imported lessons are past learning, so by default features that react to new working
    lessons (promotion and conflict detection, compaction checks) are not woken for them; `notify=True`
    sends `working_lessons_added` for each memory after the import commits.
    """
    with _collector_paused(), _import_page_cache(), transaction.atomic():
        return _import_tree(tree=tree, actor=actor, dry_run=dry_run, notify=notify)


def _import_tree(*, tree, actor, dry_run, notify):
    report = ImportReport(warnings=list(tree.warnings))
    label = f"Import of {tree.root}"[:300]
    today = timezone.localdate()
    ordered = sorted(tree.memories, key=lambda m: m.archived_at is not None)
    root = str(Path(tree.root).resolve())
    known = _imported_folders(root)
    slots, to_import = [], []
    for folder in ordered:
        rel = Path(folder.path).relative_to(tree.root).as_posix()
        unchanged = _unchanged(folder, known.get(rel))
        slots.append((rel, folder, unchanged))
        if unchanged is None:
            to_import.append(folder)
    results = iter(_import_folders(to_import, actor=actor, label=label, today=today))
    imported = {}
    for rel, folder, unchanged in slots:
        if unchanged is not None:
            report.memories.append(unchanged)
            continue
        result = next(results)
        report.memories.append(result)
        if folder.digest and not result.unparsed and not result.notes:
            imported[rel] = (folder.digest, result)
    changed = {m.memory_id for m in report.memories if m.batch_id}
    if changed:
        versions = services.memories_bump_version(changed)
        for m in report.memories:
            m.memory_version = versions.get(m.memory_id, m.memory_version)
    if imported and not dry_run:
        _remember_folders(root, imported)
    if dry_run:
        transaction.set_rollback(True)
    elif notify:
        for m in report.memories:
            if m.working_ids:
                transaction.on_commit(
                    lambda m=m: working_lessons_added.send(
                        sender=ImportReport, memory_id=m.memory_id, lesson_ids=m.working_ids
                    )
                )
    return report
