"""How lessons are written in Night Watch memory files (and in compiled memory).

working.md:  ## 2025-01-31 [OBSERVATION]
             - [OBSERVATION] text (ref: src/a.ts#L1-L2)
             <blank line>
core.md:     - [PATTERN] text (ref: src/a.ts#L1) (promoted 2025-01-31)
agents:      - [12] [PATTERN] text (ref: src/a.ts#L1, stale)   (a lesson with its id, for recall)

Lessons imported without a date stay without one: bare lines before the first section of
working.md, no `(promoted …)` in core.md.
"""

from typing import NamedTuple

from memory.refs import format_ref_list


def _body(category, text, refs, lesson_id=None):
    # Never write the doubled tag (`- [PATTERN] [PATTERN] text`) some old files contain.
    tag = f"[{category}]"
    while category and text.startswith(tag):
        text = text[len(tag) :].lstrip()
    line = f"- [{category}] {text}" if category else f"- {text}"
    if lesson_id is not None:
        line = f"- [{lesson_id}] {line[2:]}"
    if refs:
        line += f" (ref: {format_ref_list(refs)})"
    return line


class _WrittenRef(NamedTuple):
    """A ref already written as text (as a payload keeps it), and whether a check found it stale."""

    text: str
    stale: bool

    def as_text(self):
        return self.text


def id_line(lesson_id, category, text, ref_texts=(), stale=()):
    """The line of a compiled lesson with its id in front, for agents that recall lessons by id: refs
    given as text, those in `stale` marked as compiled memory marks them."""
    stale = set(stale)
    return _body(category, text, [_WrittenRef(ref, ref in stale) for ref in ref_texts], lesson_id=lesson_id)


def working_line(category, text, refs=()):
    return _body(category, text, refs)


def core_line(category, text, refs, promoted_on):
    """promoted_on None: a core line imported without a date stays without one."""
    body = _body(category, text, refs)
    return f"{body} (promoted {promoted_on.isoformat()})" if promoted_on else body


def section_header(day, category):
    return f"## {day.isoformat()} [{category}]" if category else f"## {day.isoformat()}"


def lesson_line(lesson, refs):
    """The line a lesson takes in its tier's file. Unparsed lines are written back verbatim."""
    if lesson.unparsed:
        return lesson.raw_line
    if lesson.tier == "core":
        return core_line(lesson.category, lesson.text, refs, None if _undated(lesson) else lesson.lesson_date)
    return working_line(lesson.category, lesson.text, refs)


def render_core(lessons_with_refs):
    """core.md text: one line per lesson."""
    return "".join(lesson_line(lesson, refs) + "\n" for lesson, refs in lessons_with_refs)


def _undated(lesson):
    return getattr(lesson, "undated", False)


def working_sections(lessons_with_refs):
    """Group consecutive lessons of one (date, section) into the sections of working.md.

    Returns [(heading, items)]; heading None for lessons imported without a date, written bare.
    """
    sections = []
    current_key = None
    for lesson, refs in lessons_with_refs:
        undated = _undated(lesson)
        key = (lesson.lesson_date, lesson.section, undated)
        if key != current_key:
            sections.append((None if undated else section_heading(lesson), []))
            current_key = key
        sections[-1][1].append((lesson, refs))
    return sections


def section_heading(lesson):
    # The header an imported section had is kept as read; otherwise the tag is the first bullet's.
    kept = getattr(lesson, "section_heading", "")
    return kept or section_header(lesson.lesson_date, "" if lesson.unparsed else lesson.category)


def render_section(heading, items, last=False):
    body = "".join(lesson_line(lesson, refs) + "\n" for lesson, refs in items)
    if heading is None:
        # Bare lines as a compacted file holds them; a blank line only to part them from what follows.
        return body if last else body + "\n"
    return heading + "\n" + body + "\n"


def working_order(lessons_with_refs):
    """Lessons (given in id order) in working.md order: by section, then as given.

    Sections grow as lessons are appended, so this is append order, except for a compaction's new
    lines: they take the section of the lessons they replace and so come before the lessons appended
    while the proposal waited for review, which keeps working.md in date order.
    """
    return sorted(lessons_with_refs, key=lambda item: item[0].section)


def render_working(lessons_with_refs):
    sections = working_sections(working_order(lessons_with_refs))
    return "".join(
        render_section(heading, items, last=i == len(sections) - 1) for i, (heading, items) in enumerate(sections)
    )
