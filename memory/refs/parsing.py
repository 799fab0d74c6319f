"""Code references: `path/to/file.ts#L42-L45`, `path#L42` or a bare `path`."""

import re
from dataclasses import dataclass, field

from django.core.exceptions import ValidationError

from memory.textcheck import text_problem

_REF = re.compile(r"^(?P<path>[^\s#()]+?)(?:#L(?P<start>\d+)(?:-L?(?P<end>\d+))?)?$")
MAX_REF_PATH = 500
# Line numbers are stored as 32-bit integers; no source file comes near this.
MAX_LINE = 9_999_999


# Appended after a ref in compiled memory when the check found it no longer points at what it
# was written about; the parser skips it, so text read back from an agent keeps the ref itself.
STALE_MARK = "stale"


@dataclass(frozen=True)
class Ref:
    path: str
    start_line: int | None = None
    end_line: int | None = None
    stale: bool = field(default=False, compare=False)

    def as_text(self):
        if self.start_line is None:
            return self.path
        if self.end_line is None or self.end_line == self.start_line:
            return f"{self.path}#L{self.start_line}"
        return f"{self.path}#L{self.start_line}-L{self.end_line}"


def parse_ref(text, *, backwards_ok=False, checked=False):
    """Parse one reference; raises ValidationError naming what is wrong.

    backwards_ok reads a range given backwards (#L20-L10) as the same lines instead of refusing it.
    checked: the caller already ran text_problem over text (or over the line holding it).
    """
    problem = None if checked else text_problem(text)
    if problem:
        raise ValidationError(f"a code reference {problem}")
    raw = text.strip().strip("`")
    match = _REF.match(raw)
    if not match:
        raise ValidationError(f"{text!r} is not a code reference like src/app.py#L10-L20")
    path = match["path"]
    if len(path) > MAX_REF_PATH:
        raise ValidationError(f"reference path is longer than {MAX_REF_PATH} characters")
    if ".." in path.split("/"):
        raise ValidationError(f"{text!r}: a reference path may not contain '..'")
    for number in (match["start"], match["end"]):
        if number and (len(number) > 7 or int(number) > MAX_LINE):
            raise ValidationError(f"{text!r}: line numbers go up to {MAX_LINE:,}")
    start = int(match["start"]) if match["start"] else None
    end = int(match["end"]) if match["end"] else None
    if start is not None and start < 1:
        raise ValidationError(f"{text!r}: line numbers start at 1")
    if end is not None and end < start and backwards_ok:
        start, end = end, start
    if end is not None and end < start:
        raise ValidationError(f"{text!r}: the range ends before it starts")
    if end == start:
        end = None
    return Ref(path=path, start_line=start, end_line=end)


def parse_ref_list(text, *, checked=False):
    """Comma- or newline-separated references (the form used in `(ref: a, b)` and in edit forms)."""
    refs = []
    for item in _REF_SEPARATORS.split(text or ""):
        bare = item.strip()
        if bare and bare != STALE_MARK:
            refs.append(parse_ref(item, checked=checked))
    return refs


_REF_SEPARATORS = re.compile(r"[,\n]")


# A reference named in prose ("see src/auth/login.py#L42-L45"): a path with a file extension and lines.
_REF_IN_TEXT = re.compile(r"(?<![\w/.-])(?P<ref>(?:[\w.-]+/)*[\w-]+(?:\.[\w-]+)*\.[A-Za-z0-9]+#L\d+(?:-L?\d+)?)")


def refs_in_text(*texts):
    """Distinct, valid references `path#Lx[-Ly]` named anywhere in the texts, in order of appearance."""
    found = {}
    for text in texts:
        for match in _REF_IN_TEXT.finditer(text or ""):
            try:
                ref = parse_ref(match["ref"])
            except ValidationError:
                continue
            found.setdefault(ref.as_text(), ref)
    return [ref.as_text() for ref in found.values()]


def format_ref_list(refs):
    return ", ".join(ref.as_text() + (f", {STALE_MARK}" if getattr(ref, "stale", False) else "") for ref in refs)
