"""The memory folders under a synced root, and the first import of the ones no pass knows yet."""

import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from memory.formats.importer import MemoryImport, memory_import_tree
from memory.formats.nightwatch import (
    ARCHIVED_DIR,
    CORE_FILE,
    LEGACY_FILE,
    MEMORIES_DIR,
    WORKING_FILE,
    MemoryFolder,
    Tree,
    TreeError,
    read_memory_folder,
    split_archived_folder,
)


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


def find_folders(root: str | Path) -> list[FoundFolder]:
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


def has_files(path: Path) -> bool:
    return any((path / name).is_file() for name in (CORE_FILE, WORKING_FILE, LEGACY_FILE))


def _read(found, tree, errors):
    """[(found folder, its parsed MemoryFolder)] of the folders that can be imported; errors[rel] for the others."""
    readable = []
    for f in found:
        try:
            folder = read_memory_folder(
                f.path,
                tree.root,
                f.persona_name,
                f.project_folder,
                f.archived_at,
                f.archived_folder,
                persona_folder=f.persona_folder,
                tree=tree,
            )
        except TreeError as exc:
            errors[f.rel] = str(exc).replace("; nothing was imported", "")
            continue
        if folder.rejected:
            line = folder.rejected[0]
            errors[f.rel] = f"{line.where}: {line.problem}; fix or remove the line, then sync again"
            continue
        readable.append((f, folder))
    return readable


def _in_import_order(readable: list[tuple[FoundFolder, MemoryFolder]]) -> list[tuple[FoundFolder, MemoryFolder]]:
    # An import takes active personas' folders before archived ones (so an archived folder of a name
    # also active is kept apart), and reports them in the order it took them.
    return sorted(readable, key=lambda item: item[1].archived_at is not None)


def import_new_folders(root, found, errors, *, actor) -> dict[str, MemoryImport]:
    """Folders never synced, imported in bulk (creating personas, projects, memories as import does).

    Returns {folder rel: its import's report}; a folder that cannot be imported gets errors[rel]
    instead. Raises TreeError (nothing imported) when a persona or project name cannot be stored.
    """
    tree = Tree(root=root)
    readable = _in_import_order(_read(found, tree, errors))
    if not readable:
        return {}
    tree.memories = [folder for _, folder in readable]
    reports = memory_import_tree(tree=tree, actor=actor).memories
    # The import's report of each folder is the one in its place: it is checked to be that folder's.
    if len(reports) != len(readable) or any(
        report.archived != (folder.archived_at is not None) for report, (_, folder) in zip(reports, readable)
    ):
        raise TreeError("the import did not report on each folder it was given; nothing was synced")
    return {f.rel: report for report, (f, _) in zip(reports, readable)}
