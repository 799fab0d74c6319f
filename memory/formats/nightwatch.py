"""Reading the Night Watch memory file layout.

    <root>/<persona name>/memories/<project slug>/core.md
    <root>/<persona name>/memories/<project slug>/working.md
    <root>/<persona name>/memories/<project slug>/main.md          (legacy v1, read as working.md)
    <root>/.archived/<persona name>-<timestamp>/memories/<slug>/…  (deleted personas)

working.md is a run of dated sections::

    ## 2025-01-31 [OBSERVATION]
    - [OBSERVATION] Retry uses a fixed delay (ref: src/queue/worker.ts#L88-L95)
    - [TODO] Add backoff (ref: a.ts#L1, b.ts#L2) (ref: c.ts)

core.md is one line per lesson::

    - [PATTERN] Refresh tokens skip the expiry check (ref: src/auth.ts#L23) (promoted 2025-02-01)

v1 bullets carry no tag (`- text`). Files written by the original code sometimes repeat the tag
(`- [PATTERN] [PATTERN] text`); the repeat is read away here and never written back.

Nothing is ever dropped: a line this module cannot read becomes a `ParsedLine` with
`unparsed=True`, the line verbatim and the reason, so the importer can keep it and report it.
Blank lines and section headers are structure, not lessons.

Writing the same format is `memory.formats.lines`.
"""

import hashlib
import re
import unicodedata
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path

from django.conf import settings
from django.core.exceptions import ValidationError

from memory.models import ALL_CATEGORIES, CORE_CATEGORIES, Tier
from memory.refs import parse_ref_list
from memory.textcheck import text_problem

CORE_FILE = "core.md"
WORKING_FILE = "working.md"
LEGACY_FILE = "main.md"
MEMORIES_DIR = "memories"
ARCHIVED_DIR = ".archived"
# A line this much longer than a lesson can be is not parsed at all (regexes over megabytes).
LINE_SLACK_CHARS = 2000

_HEADER = re.compile(r"^##\s+(?P<day>\d{4}-\d{2}-\d{2})(?:\s+\[(?P<category>[A-Za-z]+)\])?\s*$")
_TAG = re.compile(r"^\[(?P<category>[A-Z][A-Z_]*)\]\s*")
# Matched at the last "(ref:" / "(promoted " of the line (found with rfind: a regex search from
# every position cost more than the rest of the parse).
_REF_SUFFIX = re.compile(r"\(ref:(?P<refs>[^()]*)\)\s*$")
_PROMOTED_SUFFIX = re.compile(r"\(promoted (?P<day>\d{4}-\d{2}-\d{2})\)\s*$")
# `<name>-<timestamp>`: epoch seconds/milliseconds, or an ISO-like stamp with ':' and '.' made safe.
_ARCHIVED_NAME = re.compile(
    r"^(?P<name>.+)-(?P<stamp>\d{10}|\d{13}|\d{4}-\d{2}-\d{2}T\d{2}[-:]\d{2}[-:]\d{2}(?:[-.]\d{1,6})?Z?)$"
)


class TreeError(Exception):
    """The root cannot be imported at all; the message says why. Nothing has been written."""


class LineError(ValueError):
    """Why one line cannot be read as a lesson."""


@dataclass
class ParsedLine:
    source: str  # file path relative to the root, for reports
    line_no: int
    tier: str
    category: str = ""
    text: str = ""
    refs: list = field(default_factory=list)
    lesson_date: date | None = None  # None: the file does not say
    section: int = 0  # index of the dated section within its file; 0 before the first header
    heading: str = ""  # the section's header line as read; "" before the first header
    unparsed: bool = False
    raw_line: str = ""
    problem: str = ""
    # Too long or not text: reported as an error with file:line, never stored as a lesson.
    rejected: bool = False

    @property
    def where(self):
        return f"{self.source}:{self.line_no}"


@dataclass
class MemoryFolder:
    persona_name: str  # the persona's name (composed Unicode form)
    project_folder: str  # the folder name exactly as on disk
    path: Path
    persona_folder: str = ""  # the persona's folder name exactly as on disk (active personas)
    archived_at: datetime | None = None
    archived_folder: str = ""  # the folder name under .archived/
    # sha256 of the files it was read from ("" when not known): an import skips a folder whose
    # files have not changed since it last imported them.
    digest: str = ""
    # Fills core, working and notes when one of them is first read, so a skipped folder is never parsed.
    parser: object = field(default=None, repr=False, compare=False)

    def __post_init__(self):
        self._parsed = None

    def _lines(self):
        if self._parsed is None:
            self._parsed = {"core": [], "working": [], "notes": []}
            if self.parser is not None:
                self.parser(self)
        return self._parsed

    core = property(lambda self: self._lines()["core"], lambda self, value: self._lines().__setitem__("core", value))
    working = property(
        lambda self: self._lines()["working"], lambda self, value: self._lines().__setitem__("working", value)
    )
    notes = property(lambda self: self._lines()["notes"], lambda self, value: self._lines().__setitem__("notes", value))

    @property
    def unparsed(self):
        return [line for line in self.core + self.working if line.unparsed and not line.rejected]

    @property
    def rejected(self):
        return [line for line in self.core + self.working if line.rejected]

    @property
    def lessons(self):
        """Every line that becomes a lesson (rejected lines left out)."""
        return [line for line in self.core + self.working if not line.rejected]


@dataclass
class Tree:
    root: Path
    memories: list = field(default_factory=list)
    warnings: list = field(default_factory=list)
    # A link could pull in any file on the machine (core.md -> /etc/passwd): skipped unless asked.
    follow_symlinks: bool = False

    def readable(self, path):
        """False, with a warning naming it, for a symbolic link the import does not follow."""
        if self.follow_symlinks or not path.is_symlink():
            return True
        self.warnings.append(
            f"{path.relative_to(self.root).as_posix()}: a symbolic link; skipped (--follow-symlinks reads it)"
        )
        return False

    def is_file(self, path):
        return path.is_file() and self.readable(path)

    def is_dir(self, path):
        return path.is_dir() and self.readable(path)

    def visible_dirs(self, path):
        """Sub-folders not starting with '.', by name; links to folders only when following links."""
        return [p for p in _visible_dirs(path) if self.readable(p)]


# --- one line ------------------------------------------------------------------------------


def _parse_day(text):
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise LineError(f"{text!r} is not a date") from None


def _suffix(pattern, opening, text):
    start = text.rfind(opening)
    return pattern.match(text, start) if start >= 0 else None


def parse_bullet(line, *, tier):
    """`- [CATEGORY] text (ref: …) (promoted …)` → (category, text, refs, promoted_on).

    Raises LineError when the line is not a lesson this tier can hold.
    """
    limit = settings.LESSON_MAX_CHARS
    if len(line) > limit + LINE_SLACK_CHARS:
        raise LineError(f"the line is longer than {limit} characters ({len(line):,}), the most a lesson holds")
    if problem := text_problem(line.strip()):
        raise LineError(f"the line {problem}")
    if not line.startswith("- "):
        raise LineError("not a bullet line (expected '- [CATEGORY] text')")
    rest = line[2:].strip()
    category = ""
    tag = _TAG.match(rest)
    if tag:
        category = tag["category"]
        if category not in ALL_CATEGORIES:
            raise LineError(f"unknown category [{category}]")
        rest = rest[tag.end() :]
        # The original writer sometimes doubled the tag: read every repeat away.
        while rest.startswith("[") and (again := _TAG.match(rest)) and again["category"] == category:
            rest = rest[again.end() :]
    refs, promoted_on = [], None
    while rest.rstrip().endswith(")"):  # both suffixes end with ')': most lines stop here at once
        if tier == Tier.CORE and promoted_on is None and (m := _suffix(_PROMOTED_SUFFIX, "(promoted ", rest)):
            promoted_on = _parse_day(m["day"])
            rest = rest[: m.start()]
            continue
        if m := _suffix(_REF_SUFFIX, "(ref:", rest):
            if not m["refs"].strip():
                raise LineError("empty (ref: ) group")
            try:
                refs = parse_ref_list(m["refs"], checked=True) + refs  # the whole line was checked above
            except ValidationError as exc:
                raise LineError(f"bad reference: {' '.join(exc.messages)}") from None
            rest = rest[: m.start()]
            continue
        break
    text = rest.strip()
    if not text:
        raise LineError("no lesson text")
    if len(text) > limit:
        raise LineError(f"lesson text is longer than {limit} characters ({len(text):,})")
    if tier == Tier.CORE and category not in CORE_CATEGORIES:
        allowed = ", ".join(CORE_CATEGORIES)
        raise LineError(f"core lessons need one of {allowed}, not {('[' + category + ']') if category else 'no tag'}")
    return category, text, refs, promoted_on


def _unparsed(source, line_no, tier, raw, problem, day=None, section=0, heading=""):
    """A line kept verbatim as an unparsed lesson, or rejected when it cannot be one (too long, not text)."""
    text = raw.strip()
    rejected = len(text) > settings.LESSON_MAX_CHARS or text_problem(text) is not None
    return ParsedLine(
        source=source,
        line_no=line_no,
        tier=tier,
        text="" if rejected else text,
        lesson_date=day,
        section=section,
        heading=heading,
        unparsed=True,
        raw_line="" if rejected else raw,
        problem=problem,
        rejected=rejected,
    )


def _lines(text):
    return [line.rstrip("\r") for line in text.split("\n")]


# --- one file ------------------------------------------------------------------------------


def parse_working(text, source=WORKING_FILE):
    """Dated sections of bullets. Lines before the first header have no date (and stay undated)."""
    parsed, day, section, heading = [], None, 0, ""
    for line_no, raw in enumerate(_lines(text), start=1):
        if not raw.strip():
            continue
        if header := _HEADER.match(raw):
            try:
                day = _parse_day(header["day"])
            except LineError as exc:
                parsed.append(_unparsed(source, line_no, Tier.WORKING, raw, str(exc), day, section, heading))
                continue
            section += 1
            heading = raw.rstrip()
            continue
        try:
            category, body, refs, _ = parse_bullet(raw, tier=Tier.WORKING)
        except LineError as exc:
            parsed.append(_unparsed(source, line_no, Tier.WORKING, raw, str(exc), day, section, heading))
            continue
        parsed.append(
            ParsedLine(
                source=source,
                line_no=line_no,
                tier=Tier.WORKING,
                category=category,
                text=body,
                refs=refs,
                lesson_date=day,
                section=section,
                heading=heading,
                raw_line=raw,
            )
        )
    return parsed


def parse_core(text, source=CORE_FILE):
    """One lesson per line; the date is the `(promoted …)` day when the line has one."""
    parsed = []
    for line_no, raw in enumerate(_lines(text), start=1):
        if not raw.strip():
            continue
        try:
            category, body, refs, promoted_on = parse_bullet(raw, tier=Tier.CORE)
        except LineError as exc:
            parsed.append(_unparsed(source, line_no, Tier.CORE, raw, str(exc)))
            continue
        parsed.append(
            ParsedLine(
                source=source,
                line_no=line_no,
                tier=Tier.CORE,
                category=category,
                text=body,
                refs=refs,
                lesson_date=promoted_on,
                raw_line=raw,
            )
        )
    return parsed


# --- folder names ----------------------------------------------------------------------------


def _nfc(name):
    # Some file systems hand back decomposed names; the database keeps the composed form.
    return unicodedata.normalize("NFC", name)


def archived_folder_name(name, archived_at):
    """`<name>-<epoch milliseconds>`, the form the original code gives deleted personas."""
    # Zero-padded so a stampless archive (kept at the epoch) still reads back as a stamp.
    return f"{name}-{int(archived_at.timestamp() * 1000):013d}"


def split_archived_folder(folder):
    """`Maya-1700000000000` → ("Maya", datetime). A folder without a stamp keeps its whole name."""
    match = _ARCHIVED_NAME.match(folder)
    if not match:
        return folder, None
    stamp = match["stamp"]
    if stamp.isdigit():
        seconds = int(stamp) / (1000 if len(stamp) == 13 else 1)
        return match["name"], datetime.fromtimestamp(seconds, tz=UTC)
    day, _, clock = stamp.rstrip("Z").partition("T")
    hms = re.split(r"[-:.]", clock)
    try:
        moment = datetime.fromisoformat(f"{day}T{hms[0]}:{hms[1]}:{hms[2]}").replace(tzinfo=UTC)
    except ValueError:
        return folder, None
    return match["name"], moment


# --- the tree --------------------------------------------------------------------------------


def _read(path, root):
    return _decode(_read_bytes(path, root), path, root)


def _read_bytes(path, root):
    try:
        return path.read_bytes()
    except OSError as exc:
        raise TreeError(f"cannot read {path.relative_to(root)}: {exc.strerror}; nothing was imported") from None


def _decode(data, path, root):
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise TreeError(
            f"{path.relative_to(root)} is not UTF-8 text (byte {exc.start}); nothing was imported"
        ) from None
    # Line ends as a file opened in text mode reads them.
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text


def _visible_dirs(path):
    return sorted((p for p in path.iterdir() if p.is_dir() and not p.name.startswith(".")), key=lambda p: p.name)


def read_memory_folder(
    folder, root, persona_name, project_folder, archived_at=None, archived_folder="", persona_folder="", tree=None
):
    """The folder's files are read (and must be UTF-8) now; their lines are parsed when first asked for."""
    tree = tree or Tree(root=root)
    rel = folder.relative_to(root).as_posix()
    texts, digest = {}, hashlib.sha256()
    for name in (CORE_FILE, WORKING_FILE, LEGACY_FILE):
        path = folder / name
        if tree.is_file(path):
            data = _read_bytes(path, root)
            texts[name] = _decode(data, path, root)
            digest.update(f"{name}\0{len(data)}\0".encode())
            digest.update(data)

    def parse(mem):
        if CORE_FILE in texts:
            mem.core = parse_core(texts[CORE_FILE], f"{rel}/{CORE_FILE}")
        if WORKING_FILE in texts:
            mem.working = parse_working(texts[WORKING_FILE], f"{rel}/{WORKING_FILE}")
        if LEGACY_FILE in texts:
            _read_legacy(mem, parse_working(texts[LEGACY_FILE], f"{rel}/{LEGACY_FILE}"), WORKING_FILE in texts, rel)

    return MemoryFolder(
        persona_name=persona_name,
        project_folder=project_folder,
        path=folder,
        archived_at=archived_at,
        archived_folder=archived_folder,
        persona_folder=persona_folder,
        digest=digest.hexdigest(),
        parser=parse,
    )


def _read_legacy(mem, legacy_lines, has_working, rel):
    if has_working:
        # Both exist: the original would have ignored main.md. Keep what working.md lacks.
        seen = {(line.category, line.text, line.lesson_date) for line in mem.working}
        extra = [line for line in legacy_lines if (line.category, line.text, line.lesson_date) not in seen]
        if extra:
            offset = max((line.section for line in mem.working), default=0)
            for line in extra:
                line.section += offset
            mem.working += extra
            mem.notes.append(
                f"{rel}: both {WORKING_FILE} and {LEGACY_FILE}; {len(extra)} line(s) only in "
                f"{LEGACY_FILE} were imported as working lessons"
            )
    else:
        mem.working = legacy_lines
        mem.notes.append(f"{rel}: legacy {LEGACY_FILE} read as {WORKING_FILE}")


def _persona_memories(persona_dir, root, persona_name, tree, archived_at=None, archived_folder=""):
    memories_dir = persona_dir / MEMORIES_DIR
    rel = persona_dir.relative_to(root).as_posix()
    if memories_dir.is_symlink() and not tree.readable(memories_dir):
        return
    if not memories_dir.is_dir():
        tree.warnings.append(f"{rel}: no {MEMORIES_DIR}/ folder; skipped")
        return
    for project_dir in tree.visible_dirs(memories_dir):
        if not any((project_dir / name).is_file() for name in (CORE_FILE, WORKING_FILE, LEGACY_FILE)):
            tree.warnings.append(f"{project_dir.relative_to(root).as_posix()}: no memory files; skipped")
            continue
        tree.memories.append(
            read_memory_folder(
                project_dir,
                root,
                _nfc(persona_name),
                project_dir.name,
                archived_at,
                archived_folder,
                persona_folder="" if archived_folder else persona_dir.name,
                tree=tree,
            )
        )


def read_tree(root, *, follow_symlinks=False):
    """Parse every memory folder under `root`. Reads only; never changes the tree.

    Symbolic links inside the tree are skipped (each one reported) unless follow_symlinks.

    Raises TreeError when the root is not a Night Watch memory tree or a file cannot be read.
    """
    root = Path(root).expanduser()
    if not root.exists():
        raise TreeError(f"{root} does not exist")
    if not root.is_dir():
        raise TreeError(f"{root} is not a folder")
    tree = Tree(root=root, follow_symlinks=follow_symlinks)
    try:
        for persona_dir in tree.visible_dirs(root):
            _persona_memories(persona_dir, root, persona_dir.name, tree)
        archived = root / ARCHIVED_DIR
        if tree.is_dir(archived):
            for persona_dir in tree.visible_dirs(archived):
                name, archived_at = split_archived_folder(persona_dir.name)
                if archived_at is None:
                    tree.warnings.append(
                        f"{ARCHIVED_DIR}/{persona_dir.name}: no -<timestamp> suffix; archived under its full name"
                    )
                _persona_memories(
                    persona_dir,
                    root,
                    name,
                    tree,
                    archived_at=archived_at or datetime(1970, 1, 1, tzinfo=UTC),
                    archived_folder=persona_dir.name,
                )
    except PermissionError as exc:
        raise TreeError(f"cannot read {exc.filename}: permission denied; nothing was imported") from None
    if not tree.memories:
        raise TreeError(
            f"{root} holds no Night Watch memory folders "
            f"(expected <root>/<persona name>/{MEMORIES_DIR}/<project slug>/{WORKING_FILE})"
        )
    return tree
