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

from collections import Counter
from dataclasses import dataclass, field

from django.core.validators import validate_unicode_slug
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone
from django.utils.text import slugify

from memory import services
from memory.formats.nightwatch import TreeError
from memory.models import Change, ChangeBatch, Lesson, LessonRef, LessonStatus, Memory, content_hash
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
    notes: list = field(default_factory=list)
    batch_id: int | None = None

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


def _persona_for(folder, report):
    name = folder.persona_name.strip()
    if not name or len(name) > PERSONA_NAME_MAX:
        raise TreeError(f"persona folder {name!r}: a persona name must be 1 to {PERSONA_NAME_MAX} characters")
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


def _project_for(folder, report):
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


def _build_lessons(memory, lines, today):
    base = services.next_section(memory)
    lessons = []
    for line in lines:
        text = line.text
        lessons.append(Lesson(
            memory=memory,
            tier=line.tier,
            category=line.category,
            text=text,
            lesson_date=line.lesson_date or today,
            section=base if line.tier == "core" else base + 1 + line.section,
            unparsed=line.unparsed,
            raw_line=line.raw_line if line.unparsed else "",
            content_hash=content_hash(text),
        ))
    return lessons


def memory_import_folder(*, folder, actor, label, today=None):
    """Import one persona × project folder. Call inside a transaction (import_tree does)."""
    report = MemoryImport(
        persona=folder.persona_name, project=folder.project_folder, archived=folder.archived_at is not None,
        notes=list(folder.notes),
    )
    persona = _persona_for(folder, report)
    project = _project_for(folder, report)
    report.persona, report.project = persona.name, project.slug
    memory, created = Memory.objects.get_or_create(persona=persona, project=project)
    if created:
        report.created.append("memory")
    report.unparsed = folder.unparsed
    new_lines, report.already_present = select_new_lines(memory, folder.core + folder.working)
    if not new_lines:
        return report
    batch = services.batch_create(
        memory=memory, kind=ChangeBatch.Kind.IMPORT, actor=actor, label=label,
        reason=f"Imported from {folder.path}",
    )
    lessons = Lesson.objects.bulk_create(_build_lessons(memory, new_lines, today or timezone.localdate()))
    refs = []
    for lesson, line in zip(lessons, new_lines):
        refs.extend(
            LessonRef(lesson=lesson, path=r.path, start_line=r.start_line, end_line=r.end_line, position=i)
            for i, r in enumerate(line.refs)
        )
    LessonRef.objects.bulk_create(refs)
    Change.objects.bulk_create(
        Change(
            batch=batch, memory=memory, lesson=lesson, action=Change.Action.CREATE, before=None,
            after=services.lesson_snapshot(lesson, line.refs),
        )
        for lesson, line in zip(lessons, new_lines)
    )
    services.memory_bump_version(memory)
    report.batch_id = batch.pk
    report.core_added = sum(1 for line in new_lines if line.tier == "core")
    report.working_added = len(new_lines) - report.core_added
    return report


@transaction.atomic
def memory_import_tree(*, tree, actor, dry_run=False):
    """Import every memory folder of a parsed tree, all or nothing.

    Active persona folders come before archived ones, so an archived folder of a name that is
    also active is kept apart from the active persona. Raises TreeError (and writes nothing)
    when a persona or project name cannot be stored.
    """
    report = ImportReport(warnings=list(tree.warnings))
    label = f"Import of {tree.root}"[:300]
    today = timezone.localdate()
    ordered = sorted(tree.memories, key=lambda m: m.archived_at is not None)
    for folder in ordered:
        report.memories.append(memory_import_folder(folder=folder, actor=actor, label=label, today=today))
    if dry_run:
        transaction.set_rollback(True)
    return report
