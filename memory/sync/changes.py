"""What Night Watch changed in a memory's files since the last pass, and what the files should hold now.

A file line is known by its key (tier, category, text and refs; not its date or section), so a pass
can tell which lesson each line it left stood for (`FileLine`) and which of those lines went away.
"""

import difflib
import hashlib
from dataclasses import dataclass, field
from datetime import date

from memory.formats.lines import lesson_line, render_core, render_working, section_header, working_order
from memory.formats.nightwatch import CORE_FILE, WORKING_FILE, ParsedLine, parse_core, parse_working
from memory.models import Tier
from memory.selectors import active_lesson_rows
from memory.services import lesson_snapshot
from memory.sync.files import FILES, FileLine, FileRead, FileState, KeptInode, SyncError, decode, prev_path, sha

TIERS = {CORE_FILE: Tier.CORE, WORKING_FILE: Tier.WORKING}


# --- keys of lines ---------------------------------------------------------------------------


def _key(tier, body):
    return hashlib.blake2b(f"{tier}\0{body}".encode(), digest_size=8).hexdigest()


def _body(unparsed, category, text, ref_texts):
    return f"U\0{text}" if unparsed else f"{category}\0{text}\0{' '.join(ref_texts)}"


def parsed_key(line):
    """What identifies a file line: its tier, category, text and refs (not its date or section)."""
    return _key(line.tier, _body(line.unparsed, line.category, line.text, [r.as_text() for r in line.refs]))


def lesson_key(lesson, refs):
    """The key of the line a lesson takes in its file now."""
    return _key(lesson.tier, _body(lesson.unparsed, lesson.category, lesson.text, [r.as_text() for r in refs]))


def snapshot_key(tier, snapshot):
    """The key of the line a parsed lesson took in the `tier` file when it held this state (`lesson_snapshot`)."""
    return _key(tier, _body(False, snapshot["category"], snapshot["text"], snapshot.get("refs", ())))


def parse_file(name, text):
    return parse_core(text, name) if name == CORE_FILE else parse_working(text, name)


def file_of(lesson):
    return CORE_FILE if lesson.tier == Tier.CORE else WORKING_FILE


# --- what the files say changed --------------------------------------------------------------


@dataclass
class Removal:
    """A line the last pass left that is no longer there, and the line Night Watch wrote in its place."""

    line: FileLine
    replacement: ParsedLine | None = None


@dataclass
class Intake:
    """What the files say changed since the last pass."""

    added: list[ParsedLine] = field(default_factory=list)  # lines not standing for a kept lesson
    removed: list[Removal] = field(default_factory=list)
    kept: list[FileLine] = field(default_factory=list)  # lines the last pass left that are still there
    loose: list[ParsedLine] = field(default_factory=list)  # lines of a kept old inode rewritten in the window


def file_changes(folder_path, reads, states):
    """The Intake of every file of a folder against what the last pass left in it."""
    intake = Intake()
    for name in FILES:
        state = states.get(name)
        _diff(name, reads[name], state, intake)
        if state is not None and state.prev:
            _prev_tail(folder_path, name, state.prev, intake)
    return intake


def _lines_of(name, text):
    lines = parse_file(name, text)
    for line in lines:
        if line.rejected:
            raise SyncError(f"{line.where}: {line.problem}; fix or remove the line, then sync again")
    return lines


def _appended(data, size, digest):
    """True when data is what was left (size bytes hashing to digest, ending a line) with lines after it."""
    ends_clean = size == 0 or data[size - 1 : size] == b"\n"
    return len(data) > size and ends_clean and sha(data[:size]) == digest


def _diff(name, read: FileRead, state: FileState | None, intake):
    """Fill intake from one file against what the last pass left in it."""
    base = state.lines if state else []
    data = read.data
    if state and len(data) == state.size and sha(data) == state.sha:
        intake.kept += base
        return
    if read.fd is None:
        intake.kept += base  # a file gone altogether is written again: losing it is no one's decision
        return
    lines = _lines_of(name, read.text)
    if state and _appended(data, state.size, state.sha):
        known = data[: state.size].count(b"\n")
        intake.kept += base
        intake.added += [line for line in lines if line.line_no > known]
        return
    keys = [parsed_key(line) for line in lines]
    matcher = difflib.SequenceMatcher(None, [line.key for line in base], keys, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            intake.kept += base[i1:i2]
            continue
        gone, new = base[i1:i2], lines[j1:j2]
        # A replaced run pairs its lines in order: Night Watch's rewrite of a line stands where it stood.
        paired = len(gone) if op == "replace" else 0
        for n, line in enumerate(gone):
            intake.removed.append(Removal(line, new[n] if n < len(new) and op == "replace" else None))
        intake.added += new[paired:]


def _prev_tail(folder_path, name, prev: KeptInode, intake):
    """What was added to the old inode kept after the last replace (an O_APPEND writer that had it open)."""
    path = prev_path(folder_path, name)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return
    if len(data) == prev.size and sha(data) == prev.sha:
        return
    lines = _lines_of(name, decode(data, f"{path.parent.name}/{path.name}"))
    if _appended(data, prev.size, prev.sha):
        known = data[: prev.size].count(b"\n")
        intake.added += [line for line in lines if line.line_no > known]
    else:
        intake.loose += lines  # rewritten in place in the window: every line, matched like an import


# --- what the files should hold --------------------------------------------------------------


class _FileLineStandIn:
    """A conflict's file line standing in a lesson's place while a person decides."""

    def __init__(self, lesson, raw):
        self.id, self.tier, self.lesson_date, self.section = lesson.id, lesson.tier, lesson.lesson_date, lesson.section
        self.undated, self.section_heading = lesson.undated, lesson.section_heading
        self.protected, self.relevance = lesson.protected, lesson.relevance
        self.unparsed, self.raw_line, self.text, self.category = True, raw, raw.strip(), ""
        if not self.undated and not self.section_heading:
            self.section_heading = section_header(lesson.lesson_date, "" if lesson.unparsed else lesson.category)


@dataclass
class Rendered:
    """What a file should hold now, and which lesson (or waiting conflict) each of its lesson lines stands for."""

    text: str
    lines: list[FileLine]


def render_files(memory, conflicts):
    """{file name: Rendered} from the memory's active lessons, a waiting conflict's file line in its lesson's place."""
    rows = {lesson.id: (lesson, refs) for lesson, refs in active_lesson_rows(memory)}
    standing_in = {}  # lesson id: the FileLine of its conflict's line
    for conflict in conflicts:
        if not conflict.file_line:
            rows.pop(conflict.lesson_id, None)  # Night Watch removed the line: none while a person decides
            continue
        lesson = rows[conflict.lesson_id][0] if conflict.lesson_id in rows else conflict.lesson
        parsed = parse_file(conflict.file_name, conflict.file_line)
        rows[conflict.lesson_id] = (_FileLineStandIn(lesson, conflict.file_line), [])
        key = parsed_key(parsed[0]) if parsed else ""
        standing_in[conflict.lesson_id] = FileLine(key, conflict.lesson_id, conflict.pk)
    out = {}
    for name in FILES:
        tier = TIERS[name]
        items = sorted((item for item in rows.values() if item[0].tier == tier), key=lambda item: item[0].id)
        if tier == Tier.WORKING:
            items = working_order(items)
            text = render_working(items)
        else:
            text = render_core(items)
        # Both follow `items`: working_order is the order render_working writes its lines in.
        lines = [standing_in.get(lesson.id) or FileLine(lesson_key(lesson, refs), lesson.id) for lesson, refs in items]
        out[name] = Rendered(text, lines)
    return out


# --- the line a conflict started from ----------------------------------------------------------


class _RefText(str):
    """A ref as a history snapshot holds it (its text), for the line grammar."""

    def as_text(self):
        return str(self)


class _EarlierState:
    """A lesson as one of its history snapshots has it, for the line grammar."""

    unparsed = False

    def __init__(self, lesson, snapshot):
        self.tier, self.undated = lesson.tier, getattr(lesson, "undated", False)
        self.category, self.text = snapshot["category"], snapshot["text"]
        self.lesson_date = date.fromisoformat(snapshot["lesson_date"])


def base_line(lesson, refs, key):
    """The line the files held for this lesson after the last pass (key): its line now, or an earlier one.

    The lesson's state now and its earlier states are its history snapshots (`lesson_snapshot`),
    written with the files' line grammar; "" when none of the last 50 is the line the files held.
    """
    if lesson.unparsed:
        return lesson.raw_line
    if snapshot_key(lesson.tier, lesson_snapshot(lesson, refs)) == key:
        return lesson_line(lesson, refs)
    for after in lesson.changes.order_by("-id").values_list("after", flat=True)[:50]:
        if after and snapshot_key(lesson.tier, after) == key:
            return lesson_line(_EarlierState(lesson, after), [_RefText(ref) for ref in after.get("refs") or ()])
    return ""
