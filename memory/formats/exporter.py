"""Export memories to the Night Watch file layout (see `memory.formats.nightwatch`).

Only active lessons are written, core.md and working.md for every memory, under the folder names
each memory was imported from (new ones: the persona's name and the project's slug), archived
personas under their own `.archived/` folder (new ones: `.archived/<name>-<epoch ms>/`). Every file is written atomically (a temporary file in the same
folder, then `os.replace`), so a reader sees the old file or the new one, never half of one. A file
whose content would change is first kept as `<file>.bak-<UTC timestamp>`; a file that would not
change is left alone.
"""

import os
import shutil
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from django.utils import timezone

from memory.formats.lines import render_core, render_working
from memory.formats.nightwatch import (
    ARCHIVED_DIR,
    CORE_FILE,
    MEMORIES_DIR,
    WORKING_FILE,
    archived_folder_name,
)
from memory.models import Memory, Tier
from memory.selectors import active_lesson_rows
from memory.textcheck import name_problem

WRITERS = 16


class ExportError(Exception):
    """The export cannot be done; the message says why. Nothing has been written."""


@dataclass
class FileWrite:
    path: Path
    status: str  # "written", "replaced" or "unchanged"
    backup: Path | None = None
    lessons: int = 0


@dataclass
class ExportReport:
    root: Path
    files: list = field(default_factory=list)
    skipped: list = field(default_factory=list)  # why each memory that could not be written was left out

    def count(self, status):
        return sum(1 for f in self.files if f.status == status)


def _segment(kind, value):
    """A persona name or project slug used as one folder name, refused when it cannot be one."""
    if not value or name_problem(value):
        raise ExportError(
            f"{kind} {value!r} cannot be a folder name (no '/', '\\', and not starting with '.'); "
            "rename it and export again"
        )
    return value


def memory_folder(root, memory):
    """Where a memory's files go: the folder names it was imported under, else the names Night Watch would use."""
    persona = memory.persona
    project = _segment("project folder" if memory.project.folder_name else "project slug", memory.project.memory_folder)
    if persona.archived_at is not None:
        archived = persona.archived_folder or archived_folder_name(persona.memory_folder, persona.archived_at)
        base = Path(root) / ARCHIVED_DIR / _segment("archived persona folder", archived)
    else:
        base = Path(root) / _segment("persona folder" if persona.folder_name else "persona name", persona.memory_folder)
    return base / MEMORIES_DIR / project


def export_folders(memories, folder_for, report):
    """{memory id: folder} for the memories whose names can be folders; the others go in report.skipped.

    Names are checked where personas are made, so a bad one is old data: the rest is still exported.
    """
    folders = {}
    for memory in memories:
        try:
            folders[memory.pk] = folder_for(memory)
        except ExportError as exc:
            report.skipped.append(f"{memory.persona.name!r} / {memory.project.slug}: not exported: {exc}")
    return folders


def memories_to_export(*, persona=None, project=None):
    memories = Memory.objects.select_related("persona", "project").order_by("persona__name", "project__slug")
    if persona:
        memories = memories.filter(persona__name__iexact=persona)
    if project:
        memories = memories.filter(project__slug=project)
    return list(memories)


def render_memory_files(memory):
    """{file name: text} for one memory, in exactly the format Night Watch reads."""
    rows = active_lesson_rows(memory)
    core = [(lesson, refs) for lesson, refs in rows if lesson.tier == Tier.CORE]
    working = [(lesson, refs) for lesson, refs in rows if lesson.tier == Tier.WORKING]
    return {CORE_FILE: (render_core(core), len(core)), WORKING_FILE: (render_working(working), len(working))}


def _backup_path(path, stamp):
    candidate = path.with_name(f"{path.name}.bak-{stamp}")
    n = 1
    while candidate.exists():
        candidate = path.with_name(f"{path.name}.bak-{stamp}-{n}")
        n += 1
    return candidate


def write_atomic(path, data, *, stamp):
    """Write bytes to path atomically, keeping a backup of a file it replaces. Returns a FileWrite."""
    path = Path(path)
    old = path.read_bytes() if path.is_file() else None
    if old == data:
        return FileWrite(path, "unchanged")
    path.parent.mkdir(parents=True, exist_ok=True)
    backup = None
    if old is not None:
        backup = _backup_path(path, stamp)
        try:
            os.link(path, backup)  # the old inode stays as the backup: no copy, no window
        except OSError:
            shutil.copy2(path, backup)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return FileWrite(path, "replaced" if old is not None else "written", backup)


def export_tree(*, root, persona=None, project=None, now=None):
    """Write the chosen memories (all by default) under root. Raises ExportError before writing anything."""
    root = Path(root).expanduser()
    if root.exists() and not root.is_dir():
        raise ExportError(f"{root} exists and is not a folder")
    memories = memories_to_export(persona=persona, project=project)
    if not memories:
        which = " ".join(filter(None, [persona and f"persona {persona!r}", project and f"project {project!r}"]))
        raise ExportError(f"no memory to export{' for ' + which if which else ''}")
    report = ExportReport(root=root)
    folders = export_folders(memories, lambda memory: memory_folder(root, memory), report)
    stamp = (now or timezone.now()).strftime("%Y%m%dT%H%M%SZ")
    files = [
        (folders[memory.pk] / name, text.encode("utf-8"), count)
        for memory in memories
        if memory.pk in folders
        for name, (text, count) in render_memory_files(memory).items()
    ]

    def write(item):
        path, data, count = item
        result = write_atomic(path, data, stamp=stamp)
        result.lessons = count
        return result

    # Each file waits on its own fsync; the disk takes several at once, so files are written in parallel.
    with ThreadPoolExecutor(max_workers=WRITERS) as pool:
        report.files.extend(pool.map(write, files))
    return report
