"""The agent workspace layout: one folder per persona × project holding

    SOUL.md                      the persona (identity); written on export, never read as lessons
    MEMORY.md                    core DECISION lessons (lasting facts)
    TOOLS.md                     core PATTERN lessons (how to use the tools, gotchas)
    AGENTS.md                    core ARCHITECTURE lessons (how work is split and delegated)
    memory/YYYY-MM-DD.md         working lessons of that day (daily log)
    .learnings/LEARNINGS.md      working PATTERN and HYPOTHESIS lessons (insights), by date
    .learnings/ERRORS.md         working lessons that record an error ("… — error: message"), by date
    .learnings/FEATURE_REQUESTS.md  working TODO lessons, by date

Lines are the same bullets as the Night Watch files (`- [CATEGORY] text (ref: …)`); an untagged
bullet takes its file's category. Under ROOT the folders are ROOT/<persona>/<project>/.
"""

import re
from collections import defaultdict
from datetime import date
from pathlib import Path

from memory.formats.exporter import ExportError, ExportReport, _segment, write_atomic
from memory.formats.lines import core_line, working_line
from memory.formats.nightwatch import (
    LineError,
    MemoryFolder,
    ParsedLine,
    Tree,
    TreeError,
    _nfc,
    _read,
    _unparsed,
    parse_bullet,
)
from memory.models import Lesson, LessonStatus, Tier
from memory.selectors import lesson_rows_with_refs, unexpired

SOUL, MEMORY, TOOLS, AGENTS = "SOUL.md", "MEMORY.md", "TOOLS.md", "AGENTS.md"
DAILY_DIR, LEARNINGS_DIR = "memory", ".learnings"
LEARNINGS, ERRORS, FEATURES = "LEARNINGS.md", "ERRORS.md", "FEATURE_REQUESTS.md"
ERROR_MARK = " — error: "

# file (relative to the workspace) -> (tier, category of an untagged bullet, title)
CORE_FILES = {MEMORY: "DECISION", TOOLS: "PATTERN", AGENTS: "ARCHITECTURE"}
LEARNING_FILES = {LEARNINGS: "PATTERN", ERRORS: "OBSERVATION", FEATURES: "TODO"}
TITLES = {
    MEMORY: "Memory: lasting facts",
    TOOLS: "Tools: usage patterns",
    AGENTS: "Agents: delegation and structure",
    LEARNINGS: "Learnings",
    ERRORS: "Errors",
    FEATURES: "Feature requests",
}
_HEADER = re.compile(r"^##\s+(?P<day>\d{4}-\d{2}-\d{2})\b")
_DAILY = re.compile(r"^(\d{4}-\d{2}-\d{2})\.md$")
_TAGGED = re.compile(r"^- \[[A-Z][A-Z_]*\]")


# --- reading ---------------------------------------------------------------------------------


def parse_workspace_file(text, *, source, tier, default_category, day=None):
    """Bullets of one workspace file as ParsedLines; '#' lines are titles, other prose is kept unparsed."""
    lines, section = [], 0
    for n, raw in enumerate(text.split("\n"), start=1):
        line = raw.rstrip("\r")
        stripped = line.strip()
        if not stripped:
            continue
        if header := _HEADER.match(stripped):
            try:
                day = date.fromisoformat(header["day"])
            except ValueError:
                lines.append(_unparsed(source, n, tier, line, "not a date header", day, section))
                continue
            section += 1
            continue
        if stripped.startswith("#"):
            continue
        bullet = stripped
        if bullet.startswith("- ") and not _TAGGED.match(bullet):
            bullet = f"- [{default_category}] {bullet[2:].strip()}"
        try:
            category, body, refs, promoted_on = parse_bullet(bullet, tier=tier)
        except LineError as exc:
            lines.append(_unparsed(source, n, tier, line, str(exc), day, section))
            continue
        lines.append(
            ParsedLine(
                source=source,
                line_no=n,
                tier=tier,
                category=category,
                text=body,
                refs=refs,
                lesson_date=promoted_on or day,
                section=section,
            )
        )
    return lines


def read_workspace_folder(folder, root, persona_name, project_folder, tree=None):
    tree = tree or Tree(root=root)
    mem = MemoryFolder(persona_name=persona_name, project_folder=project_folder, path=folder)
    rel = folder.relative_to(root).as_posix()
    for name, category in CORE_FILES.items():
        path = folder / name
        if tree.is_file(path):
            mem.core += parse_workspace_file(
                _read(path, root), source=f"{rel}/{name}", tier=Tier.CORE, default_category=category
            )
    daily = folder / DAILY_DIR
    section_base = 0
    if tree.is_dir(daily):
        for path in sorted(p for p in daily.iterdir() if tree.is_file(p)):
            match = _DAILY.match(path.name)
            if not match:
                mem.notes.append(f"{rel}/{DAILY_DIR}/{path.name}: not a YYYY-MM-DD.md daily log; skipped")
                continue
            lines = parse_workspace_file(
                _read(path, root),
                source=f"{rel}/{DAILY_DIR}/{path.name}",
                tier=Tier.WORKING,
                default_category="OBSERVATION",
                day=date.fromisoformat(match[1]),
            )
            for line in lines:
                line.section += section_base
            section_base += 1 + max((line.section for line in lines), default=0)
            mem.working += lines
    learnings = folder / LEARNINGS_DIR
    for name, category in LEARNING_FILES.items() if tree.is_dir(learnings) else ():
        path = learnings / name
        if tree.is_file(path):
            lines = parse_workspace_file(
                _read(path, root), source=f"{rel}/{LEARNINGS_DIR}/{name}", tier=Tier.WORKING, default_category=category
            )
            for line in lines:
                line.section += section_base
            section_base += 1 + max((line.section for line in lines), default=0)
            mem.working += lines
    if (folder / SOUL).is_file():
        mem.notes.append(f"{rel}/{SOUL}: describes the persona; edit the persona itself, it is not imported as lessons")
    return mem


def read_workspace_tree(root, *, follow_symlinks=False):
    """ROOT/<persona>/<project>/ workspaces → a Tree the importer reads like the Night Watch one.

    Symbolic links inside the tree are skipped (each one reported) unless follow_symlinks.
    """
    root = Path(root).expanduser()
    if not root.is_dir():
        raise TreeError(f"{root} is not a folder" if root.exists() else f"{root} does not exist")
    tree = Tree(root=root, follow_symlinks=follow_symlinks)
    for persona_dir in tree.visible_dirs(root):
        for project_dir in tree.visible_dirs(persona_dir):
            if not any((project_dir / n).exists() for n in (*CORE_FILES, SOUL, DAILY_DIR, LEARNINGS_DIR)):
                tree.warnings.append(f"{project_dir.relative_to(root).as_posix()}: no workspace files; skipped")
                continue
            tree.memories.append(
                read_workspace_folder(project_dir, root, _nfc(persona_dir.name), _nfc(project_dir.name), tree=tree)
            )
    return tree


# --- writing ---------------------------------------------------------------------------------


def working_file_for(lesson):
    if lesson.category == "TODO":
        return f"{LEARNINGS_DIR}/{FEATURES}"
    if ERROR_MARK in lesson.text:
        return f"{LEARNINGS_DIR}/{ERRORS}"
    if lesson.category in ("PATTERN", "HYPOTHESIS"):
        return f"{LEARNINGS_DIR}/{LEARNINGS}"
    return f"{DAILY_DIR}/{lesson.lesson_date.isoformat()}.md"


def render_workspace_files(memory):
    """{relative path: (text, lesson count)} for one memory."""
    rows = lesson_rows_with_refs(
        # As compiled memory: a lesson is not written from its expires_on day on.
        Lesson.objects.filter(unexpired(), memory=memory, status=LessonStatus.ACTIVE)
        .exclude(unparsed=True)
        .order_by("lesson_date", "id")
    )
    persona = memory.persona
    files = {
        SOUL: (
            [
                f"# {persona.name}",
                "",
                f"Role: {persona.role}" if persona.role else "Role: (not set)",
                "",
                "This file describes the persona; lessons live in the other files.",
            ],
            0,
        )
    }
    core = {name: [] for name in CORE_FILES}
    by_category = {category: name for name, category in CORE_FILES.items()}
    working = defaultdict(lambda: defaultdict(list))
    for lesson, refs in rows:
        if lesson.tier == Tier.CORE:
            core[by_category.get(lesson.category, MEMORY)].append(
                core_line(lesson.category, lesson.text, refs, lesson.lesson_date)
            )
        else:
            working[working_file_for(lesson)][lesson.lesson_date].append(
                working_line(lesson.category, lesson.text, refs)
            )
    for name, lines in core.items():
        files[name] = ([f"# {TITLES[name]}", "", *lines], len(lines))
    for path, days in working.items():
        count = sum(len(v) for v in days.values())
        if path.startswith(DAILY_DIR + "/"):
            ((day, lines),) = days.items()
            files[path] = ([f"# {day.isoformat()}", "", *lines], count)
            continue
        body = [f"# {TITLES[path.split('/')[-1]]}", ""]
        for day in sorted(days):
            body += [f"## {day.isoformat()}", *days[day], ""]
        files[path] = (body, count)
    return {path: ("\n".join(lines).rstrip("\n") + "\n", count) for path, (lines, count) in files.items()}


def export_workspace_tree(*, root, persona=None, project=None, now=None):
    from django.utils import timezone

    from memory.formats.exporter import export_folders, memories_to_export

    root = Path(root).expanduser()
    if root.exists() and not root.is_dir():
        raise ExportError(f"{root} exists and is not a folder")
    memories = memories_to_export(persona=persona, project=project)
    if not memories:
        raise ExportError("no memory to export")
    report = ExportReport(root=root)
    folders = export_folders(
        memories,
        lambda m: root / _segment("persona name", m.persona.name) / _segment("project slug", m.project.slug),
        report,
    )
    stamp = (now or timezone.now()).strftime("%Y%m%dT%H%M%SZ")
    for memory in memories:
        if memory.pk not in folders:
            continue
        for name, (text, count) in render_workspace_files(memory).items():
            result = write_atomic(folders[memory.pk] / name, text.encode("utf-8"), stamp=stamp)
            result.lessons = count
            report.files.append(result)
    return report


__all__ = ["export_workspace_tree", "read_workspace_tree", "render_workspace_files"]
