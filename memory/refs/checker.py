"""Decide each ref's status at the repository's head: valid, moved, changed or gone.

Pure logic over a `Repository`: one `ls-tree` of the head, one `git diff -M` per distinct commit
the refs were last verified at, one `cat-file --batch` for every file that needs reading. A file
untouched since a ref's commit is valid without being read.
"""

import hashlib
import re
from dataclasses import dataclass, field

from memory.refs.models import RefStatus

CONTEXT_LINES = 3
_WS = re.compile(r"\s+")


def normalize_line(line):
    # Re-indenting or re-wrapping whitespace does not change what a line says.
    return _WS.sub(" ", line).strip()


def _digest(lines):
    return hashlib.sha256("\n".join(lines).encode("utf-8", "surrogatepass")).hexdigest()


def _line_digest(line):
    return hashlib.blake2b(line.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


class FileText:
    """A file's normalised lines, with per-line digests computed only when a search needs them."""

    def __init__(self, text):
        self.lines = [normalize_line(line) for line in text.split("\n")]
        if self.lines and self.lines[-1] == "" and text.endswith("\n"):
            self.lines.pop()  # the newline that ends the last line is not a line
        self._digests = None

    def __len__(self):
        return len(self.lines)

    def window(self, start, end):
        return _digest(self.lines[start - 1 : end])

    def before(self, start):
        return _digest(self.lines[max(0, start - 1 - CONTEXT_LINES) : start - 1])

    def after(self, end):
        return _digest(self.lines[end : end + CONTEXT_LINES])

    def first_line(self, start):
        return _line_digest(self.lines[start - 1])

    def find(self, anchor):
        """Every start line where the anchor's lines are found, best candidate first."""
        if self._digests is None:
            self._digests = [_line_digest(line) for line in self.lines]
        length = anchor.end - anchor.start + 1
        found = []
        for i, digest in enumerate(self._digests):
            if digest == anchor.first_line and i + length <= len(self.lines):
                start = i + 1
                if self.window(start, start + length - 1) == anchor.fingerprint:
                    found.append(start)
        # Copies of the same lines: prefer the one whose surroundings match, then the nearest.
        return sorted(
            found,
            key=lambda s: (
                -((self.before(s) == anchor.context_before) + (self.after(s + length - 1) == anchor.context_after)),
                abs(s - anchor.start),
            ),
        )


@dataclass
class Anchor:
    """What the check needs of one RefAnchor."""

    id: int
    path: str
    start: int | None
    end: int | None
    commit: str = ""
    fingerprint: str = ""
    first_line: str = ""
    context_before: str = ""
    context_after: str = ""

    @property
    def anchored(self):
        return bool(self.commit)


@dataclass
class Outcome:
    status: str
    commit: str = ""  # verified at (valid), else the commit it was last verified at
    fingerprint: dict = field(default_factory=dict)  # set when the ref gets anchored now
    proposed: tuple = ()  # (path, start, end) for a move
    note: str = ""


def fingerprint_at(text, start, end):
    return {
        "fingerprint": text.window(start, end),
        "first_line": text.first_line(start),
        "context_before": text.before(start),
        "context_after": text.after(end),
    }


def _range(anchor):
    end = anchor.end or anchor.start
    return anchor.start, end


def _beyond_end(anchor, text):
    start, end = _range(anchor)
    return f"lines {start}-{end} are past the end of the file ({len(text)} lines)"


def _anchor_now(anchor, files, read, head, folders):
    """A ref never verified: anchor it at head if its range is in the file."""
    if anchor.start is None and anchor.path.rstrip("/") in folders:
        return Outcome(RefStatus.VALID, commit=head)
    if anchor.path not in files:
        return Outcome(RefStatus.GONE, note=f"{anchor.path} is not in the repository")
    if anchor.start is None:
        return Outcome(RefStatus.VALID, commit=head)
    text = read(files[anchor.path])
    start, end = _range(anchor)
    if end > len(text):
        return Outcome(RefStatus.CHANGED, note=_beyond_end(anchor, text))
    return Outcome(RefStatus.VALID, commit=head, fingerprint=fingerprint_at(text, start, end))


def _recheck(anchor, files, read, head, change, folders):
    """A ref verified at an earlier commit: is it still there, elsewhere, or not at all?"""
    modified, _deleted, renamed = change if change is not None else (None, set(), {})
    path = anchor.path
    if anchor.start is None and path.rstrip("/") in folders:
        return Outcome(RefStatus.VALID, commit=head)  # a folder: valid while it holds any file
    if path in renamed:
        target = renamed[path]
    elif path in files:
        target = path
    else:
        target = None
    if change is not None and target == path and path not in modified:
        return Outcome(RefStatus.VALID, commit=head)  # untouched since it was verified
    if target is None:
        return Outcome(RefStatus.GONE, commit=anchor.commit, note=f"{path} was deleted")
    if anchor.start is None:
        if target == path:
            return Outcome(RefStatus.VALID, commit=head)
        return Outcome(
            RefStatus.MOVED, commit=anchor.commit, proposed=(target, None, None), note=f"renamed to {target}"
        )
    anchor.start, anchor.end = _range(anchor)
    text = read(files[target])
    if target == path and anchor.end <= len(text) and text.window(anchor.start, anchor.end) == anchor.fingerprint:
        return Outcome(RefStatus.VALID, commit=head)
    found = text.find(anchor) if anchor.fingerprint else []
    if found:
        start = found[0]
        note = f"renamed to {target}" if target != path else ""
        return Outcome(
            RefStatus.MOVED,
            commit=anchor.commit,
            proposed=(target, start, start + anchor.end - anchor.start),
            note=note,
        )
    if anchor.end > len(text):
        note = _beyond_end(anchor, text)
    else:
        note = "the referenced lines were edited"
    if target != path:
        note = f"renamed to {target}; {note}"
    return Outcome(RefStatus.CHANGED, commit=anchor.commit, note=note)


def check_anchors(repo, head, anchors):
    """{anchor id: Outcome} for every anchor, at commit `head` of `repo`."""
    files = repo.tree(head)
    folders = {path[:i] for path in files for i, ch in enumerate(path) if ch == "/"}
    changes = {
        commit: repo.changes(commit, head) for commit in {a.commit for a in anchors if a.commit and a.commit != head}
    }
    changes[head] = (set(), set(), {})

    # Which blobs a ref may need: read them all in one batch, each parsed once.
    wanted = set()
    for a in anchors:
        if a.start is None:
            continue
        change = changes.get(a.commit) if a.anchored else None
        if change is not None and a.path in files and a.path not in change[0] and a.path not in change[2]:
            continue
        target = change[2].get(a.path, a.path) if change else a.path
        if target in files:
            wanted.add(files[target])
    raw = repo.blobs(wanted)
    parsed = {}

    def read(sha):
        if sha not in parsed:
            parsed[sha] = FileText(raw.get(sha, ""))
        return parsed[sha]

    outcomes = {}
    for a in anchors:
        if a.anchored:
            outcomes[a.id] = _recheck(a, files, read, head, changes.get(a.commit), folders)
        else:
            outcomes[a.id] = _anchor_now(a, files, read, head, folders)
    return outcomes
