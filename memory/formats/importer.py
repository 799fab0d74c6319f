"""Import a parsed memory tree into the store.

Each memory's new lessons are written as one ChangeBatch of kind `import` (so an import can be
reverted as a unit from the history), with one `create` Change per lesson and one version bump
per memory. Lessons are bulk-inserted: an import of a whole team's memory is one transaction.

Idempotence. A file line and a stored lesson are the same when they share tier, category, content
hash of the text and, when the file states it, the date (the section date in working.md, the
`(promoted …)` day in core.md). Stored lessons count in any status, so a lesson deleted or
promoted since the last import is not brought back; only lessons whose creation was reverted
(a reverted import) no longer count, so importing again redoes a reverted import. Lines are
matched as a multiset, so a bullet written twice in a file is imported twice, and importing the
same tree again adds nothing. Lines without a date (bullets before the first section header, core
lines without `(promoted …)`, unparsed lines) match a stored lesson of the same content on any
date, and take the import day when added.
"""

import sqlite3
from collections import Counter
from dataclasses import dataclass, field

from django.core.exceptions import ValidationError
from django.core.validators import validate_unicode_slug
from django.db import connection, models, transaction
from django.utils import timezone
from django.utils.text import slugify

from memory import services
from memory.formats.nightwatch import TreeError
from memory.models import Change, ChangeBatch, Lesson, LessonRef, LessonStatus, Memory, content_hash
from memory.signals import working_lessons_added
from memory.textcheck import name_problem
from personas.models import Persona, Project

PERSONA_NAME_MAX = Persona._meta.get_field("name").max_length
PROJECT_SLUG_MAX = Project._meta.get_field("slug").max_length
PROJECT_NAME_MAX = Project._meta.get_field("name").max_length


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
    working_ids: list = field(default_factory=list, repr=False)

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


def select_new_lines(memory, lines):
    """The file lines not already stored in `memory` (see the module docstring), in file order."""
    full, content = Counter(), Counter()
    stored = Lesson.objects.filter(memory=memory).exclude(
        # An import (or any creation) that was reverted does not count: importing again redoes it.
        status=LessonStatus.DELETED, changes__action=Change.Action.CREATE, changes__reverted_by__isnull=False
    )
    for tier, category, day, digest, unparsed in stored.values_list(
        "tier", "category", "lesson_date", "content_hash", "unparsed"
    ):
        key = _content_key(tier, unparsed, category, digest)
        content[key] += 1
        if not unparsed:
            full[(key, day)] += 1
    if not full and not content:
        return list(lines), 0
    keep = [True] * len(lines)
    keyed = [(_content_key(l.tier, l.unparsed, l.category, _line_hash(l)), l) for l in lines]
    dated_first = sorted(
        range(len(lines)), key=lambda i: 0 if (lines[i].lesson_date and not lines[i].unparsed) else 1
    )
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
    new = [line for line, k in zip(lines, keep) if k]
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
    persona = Persona.objects.filter(name__iexact=name).first()
    if folder.archived_at is None:
        if persona is None:
            persona = Persona.objects.create(name=name)
            report.created.append("persona")
        elif persona.archived_at is not None:
            report.notes.append(f"persona {persona.name} is archived here; its memory was updated all the same")
        return persona
    if persona is not None and persona.archived_at is None:
        # The name now belongs to an active persona: keep the archived one apart, under its folder name.
        name = folder.archived_folder
        if len(name) > PERSONA_NAME_MAX:
            raise TreeError(f"archived folder {name!r}: a persona name must be at most {PERSONA_NAME_MAX} characters")
        persona = Persona.objects.filter(name__iexact=name).first()
    if persona is None:
        persona = Persona.objects.create(name=name, archived_at=folder.archived_at)
        report.created.append("persona")
    return persona


def project_slug_for(folder_name):
    """The folder name itself when it is a valid slug, else its slugified form."""
    try:
        validate_unicode_slug(folder_name)
        return folder_name
    except ValidationError:
        return slugify(folder_name, allow_unicode=True)


def _project_for(folder, report, cache):
    key = ("project", folder.project_folder)
    if key not in cache:
        cache[key] = _find_project(folder, report)
    return cache[key]


def _find_project(folder, report):
    folder_name = folder.project_folder
    slug = project_slug_for(folder_name)
    if not slug or len(slug) > PROJECT_SLUG_MAX:
        raise TreeError(
            f"project folder {folder_name!r} gives no usable slug (letters, digits, '-' or '_', "
            f"at most {PROJECT_SLUG_MAX} characters)"
        )
    project = Project.objects.filter(slug=slug).first()
    if project is None:
        project = Project.objects.create(slug=slug, name=folder_name[:PROJECT_NAME_MAX])
        report.created.append("project")
    if slug != folder_name:
        report.notes.append(f"project folder {folder_name!r} is the project with slug {slug!r} (exported under that name)")
    return project


def _param_limit():
    """Bound parameters one statement may carry on this connection."""
    if connection.vendor == "sqlite":
        connection.ensure_connection()
        try:
            return connection.connection.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER)
        except (AttributeError, sqlite3.Error):  # getlimit arrived in Python 3.11
            return 999
    return connection.features.max_query_params or 65535


class _Inserter:
    """Multi-row INSERTs without building model instances: the ORM's per-object cost dominated imports.

    Every concrete column of the model is written: the ones given per row, the rest from the
    field's default (auto_now fields get the import time), so a field added to the model later
    is filled just as `Model.objects.create` would fill it.
    """

    MAX_ROWS = 1000  # rows per multi-row INSERT, within every supported database's parameter limit

    def __init__(self, model, varying, now):
        self.connection = connection
        ops = connection.ops
        self.fields = [f for f in model._meta.concrete_fields if not f.primary_key]
        self.varying = list(varying)
        by_name = {f.attname: f for f in self.fields}
        self.adapt = []
        for name in self.varying:
            field_ = by_name[name]
            if isinstance(field_, models.JSONField):
                self.adapt.append(lambda v, f=field_: f.get_db_prep_save(v, connection))
            elif isinstance(field_, models.DateTimeField):
                self.adapt.append(ops.adapt_datetimefield_value)
            elif isinstance(field_, models.DateField):
                self.adapt.append(ops.adapt_datefield_value)
            else:
                self.adapt.append(None)
        constants = {}
        for f in self.fields:
            if f.attname in self.varying:
                continue
            value = now if getattr(f, "auto_now", False) or getattr(f, "auto_now_add", False) else f.get_default()
            constants[f.attname] = f.get_db_prep_save(value, connection)
        self.constants = constants
        qn = ops.quote_name
        self.columns = [f.attname for f in self.fields if f.attname in self.varying] + list(constants)
        self.column_sql = ", ".join(qn(by_name[name].column) for name in self.columns)
        self.table = qn(model._meta.db_table)
        self.pk = qn(model._meta.pk.column)
        self.order = [self.varying.index(name) for name in self.columns if name in self.varying]
        self.constant_values = list(constants.values())

    def _row(self, values):
        adapted = [a(v) if a else v for a, v in zip(self.adapt, values)]
        return [adapted[i] for i in self.order] + self.constant_values

    def insert(self, rows, *, returning=False):
        """rows: tuples in `varying` order. Returns the new primary keys in row order when asked."""
        width = len(self.columns)
        one = "(" + ", ".join(["%s"] * width) + ")"
        ids = []
        with self.connection.cursor() as cursor:
            if not returning and self.connection.vendor == "sqlite":  # prepared once, fastest there
                cursor.executemany(f"INSERT INTO {self.table} ({self.column_sql}) VALUES {one}",
                                   [self._row(r) for r in rows])
                return ids
            per = max(1, min(self.MAX_ROWS, _param_limit() // width))
            for start in range(0, len(rows), per):
                chunk = rows[start:start + per]
                params = [v for r in chunk for v in self._row(r)]
                sql = f"INSERT INTO {self.table} ({self.column_sql}) VALUES {', '.join([one] * len(chunk))}"
                if returning:
                    cursor.execute(f"{sql} RETURNING {self.pk}", params)
                    ids.extend(row[0] for row in cursor.fetchall())
                else:
                    cursor.execute(sql, params)
        return ids


_LESSON_COLUMNS = ("memory_id", "tier", "category", "text", "lesson_date", "section", "unparsed", "raw_line",
                   "content_hash")
_REF_COLUMNS = ("lesson_id", "path", "start_line", "end_line", "position")
_CHANGE_COLUMNS = ("batch_id", "memory_id", "lesson_id", "action", "after")


@dataclass
class _Snapshot:
    """What lesson_snapshot reads, for a lesson inserted without a model instance."""

    tier: str
    category: str
    text: str
    lesson_date: object
    relevance: str = Lesson._meta.get_field("relevance").default
    protected: bool = Lesson._meta.get_field("protected").default
    status: str = Lesson._meta.get_field("status").default


def _inserters(cache):
    """One set of inserters per import (building one reads the model's fields and defaults)."""
    if "inserters" not in cache:
        now = timezone.now()
        cache["inserters"] = (
            _Inserter(Lesson, _LESSON_COLUMNS, now),
            _Inserter(LessonRef, _REF_COLUMNS, now),
            _Inserter(Change, _CHANGE_COLUMNS, now),
        )
    return cache["inserters"]


def _insert_lessons(memory, batch, lines, today, base, cache):
    lesson_inserter, ref_inserter, change_inserter = _inserters(cache)
    rows, snapshots = [], []
    for line in lines:
        day = line.lesson_date or today
        section = base if line.tier == "core" else base + 1 + line.section
        rows.append((memory.pk, line.tier, line.category, line.text, day, section, line.unparsed,
                     line.raw_line if line.unparsed else "", content_hash(line.text)))
        snapshots.append(services.lesson_snapshot(_Snapshot(line.tier, line.category, line.text, day), line.refs))
    ids = lesson_inserter.insert(rows, returning=True)
    refs = [
        (lesson_id, r.path, r.start_line, r.end_line, position)
        for lesson_id, line in zip(ids, lines)
        for position, r in enumerate(line.refs)
    ]
    if refs:
        ref_inserter.insert(refs)
    change_inserter.insert(
        [(batch.pk, memory.pk, lesson_id, Change.Action.CREATE, after) for lesson_id, after in zip(ids, snapshots)]
    )
    return ids


def memory_import_folder(*, folder, actor, label, today=None, cache=None):
    """Import one persona × project folder. Call inside a transaction (import_tree does).

    `cache` (a dict shared across the folders of one import) saves looking up a persona or
    project again for each of its folders.
    """
    cache = {} if cache is None else cache
    report = MemoryImport(
        persona=folder.persona_name, project=folder.project_folder, archived=folder.archived_at is not None,
        notes=list(folder.notes),
    )
    persona = _persona_for(folder, report, cache)
    project = _project_for(folder, report, cache)
    report.persona, report.project = persona.name, project.slug
    memory = Memory.objects.filter(persona=persona, project=project).first()
    report.unparsed = folder.unparsed
    report.rejected = folder.rejected
    if memory is None:
        memory = Memory.objects.create(persona=persona, project=project)
        report.created.append("memory")
        new_lines, base = folder.lessons, 1  # a new memory holds nothing yet
    else:
        new_lines, report.already_present = select_new_lines(memory, folder.lessons)
        base = services.next_section(memory)
    if not new_lines:
        return report
    batch = services.batch_create(
        memory=memory, kind=ChangeBatch.Kind.IMPORT, actor=actor, label=label,
        reason=f"Imported from {folder.path}",
    )
    ids = _insert_lessons(memory, batch, new_lines, today or timezone.localdate(), base, cache)
    report.working_ids = [pk for pk, line in zip(ids, new_lines) if line.tier == "working"]
    services.memory_bump_version(memory)
    report.batch_id = batch.pk
    report.memory_id = memory.pk
    report.core_added = sum(1 for line in new_lines if line.tier == "core")
    report.working_added = len(new_lines) - report.core_added
    return report


@transaction.atomic
def memory_import_tree(*, tree, actor, dry_run=False, notify=False):
    """Import every memory folder of a parsed tree, all or nothing.

    Active persona folders come before archived ones, so an archived folder of a name that is
    also active is kept apart from the active persona. Raises TreeError (and writes nothing)
    when a persona or project name cannot be stored.

    Imported lessons are past learning, so by default features that react to new working
    lessons (promotion detection, compaction checks) are not woken for them; `notify=True`
    sends `working_lessons_added` for each memory after the import commits.
    """
    report = ImportReport(warnings=list(tree.warnings))
    label = f"Import of {tree.root}"[:300]
    today = timezone.localdate()
    ordered = sorted(tree.memories, key=lambda m: m.archived_at is not None)
    cache = {}
    for folder in ordered:
        report.memories.append(
            memory_import_folder(folder=folder, actor=actor, label=label, today=today, cache=cache)
        )
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
