"""How lessons are written in Night Watch memory files (and in compiled memory).

working.md:  ## 2025-01-31 [OBSERVATION]
             - [OBSERVATION] text (ref: src/a.ts#L1-L2)
             <blank line>
core.md:     - [PATTERN] text (ref: src/a.ts#L1) (promoted 2025-01-31)
"""

from memory.refs import format_ref_list


def _body(category, text, refs):
    # Never write the doubled tag (`- [PATTERN] [PATTERN] text`) some old files contain.
    tag = f"[{category}]"
    while category and text.startswith(tag):
        text = text[len(tag):].lstrip()
    line = f"- [{category}] {text}" if category else f"- {text}"
    if refs:
        line += f" (ref: {format_ref_list(refs)})"
    return line


def working_line(category, text, refs=()):
    return _body(category, text, refs)


def core_line(category, text, refs, promoted_on):
    return f"{_body(category, text, refs)} (promoted {promoted_on.isoformat()})"


def section_header(day, category):
    return f"## {day.isoformat()} [{category}]" if category else f"## {day.isoformat()}"


def lesson_line(lesson, refs):
    """The line a lesson takes in its tier's file. Unparsed lines are written back verbatim."""
    if lesson.unparsed:
        return lesson.raw_line
    if lesson.tier == "core":
        return core_line(lesson.category, lesson.text, refs, lesson.lesson_date)
    return working_line(lesson.category, lesson.text, refs)


def render_core(lessons_with_refs):
    """core.md text: one line per lesson."""
    return "".join(lesson_line(lesson, refs) + "\n" for lesson, refs in lessons_with_refs)


def working_sections(lessons_with_refs):
    """Group consecutive lessons of one (date, section) into the dated sections of working.md."""
    sections = []
    current_key = None
    for lesson, refs in lessons_with_refs:
        key = (lesson.lesson_date, lesson.section)
        if key != current_key:
            sections.append((lesson.lesson_date, []))
            current_key = key
        sections[-1][1].append((lesson, refs))
    return sections


def render_section(day, items):
    first = items[0][0]
    header = section_header(day, "" if first.unparsed else first.category)
    return header + "\n" + "".join(lesson_line(lesson, refs) + "\n" for lesson, refs in items) + "\n"


def working_order(lessons_with_refs):
    """Lessons (given in id order) in working.md order: by section, then as given.

    Sections grow as lessons are appended, so this is append order, except for a compaction's new
    lines: they take the section of the lessons they replace and so come before the lessons appended
    while the proposal waited for review, which keeps working.md in date order.
    """
    return sorted(lessons_with_refs, key=lambda item: item[0].section)


def render_working(lessons_with_refs):
    sections = working_sections(working_order(lessons_with_refs))
    return "".join(render_section(day, items) for day, items in sections)
