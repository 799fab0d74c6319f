import re
from datetime import UTC, date, datetime

import pytest

from memory.formats.lines import working_line
from memory.formats.nightwatch import (
    LineError,
    archived_folder_name,
    parse_bullet,
    parse_core,
    parse_working,
    split_archived_folder,
)
from memory.refs import Ref


def test_tagged_bullet_with_range_ref():
    assert parse_bullet("- [OBSERVATION] Fixed 1s retry delay (ref: src/queue/worker.ts#L88-L95)", tier="working") == (
        "OBSERVATION",
        "Fixed 1s retry delay",
        [Ref("src/queue/worker.ts", 88, 95)],
        None,
    )


def test_single_line_ref_and_bare_path():
    _, _, refs, _ = parse_bullet("- [TODO] Check it (ref: src/a.py#L42, docs/README.md)", tier="working")
    assert refs == [Ref("src/a.py", 42, None), Ref("docs/README.md")]


def test_repeated_ref_groups_keep_their_order():
    _, text, refs, _ = parse_bullet("- [HYPOTHESIS] Race (ref: a.py#L1, b.py#L2) (ref: c.py#L3-L4)", tier="working")
    assert text == "Race"
    assert [r.as_text() for r in refs] == ["a.py#L1", "b.py#L2", "c.py#L3-L4"]


def test_ref_in_the_middle_of_text_stays_text():
    _, text, refs, _ = parse_bullet("- [OBSERVATION] See (ref: a.py) then decide", tier="working")
    assert text == "See (ref: a.py) then decide" and refs == []


def test_core_line_with_promoted_date():
    assert parse_bullet(
        "- [PATTERN] Tokens skip expiry (ref: src/auth.ts#L23-L30) (promoted 2025-03-04)", tier="core"
    ) == ("PATTERN", "Tokens skip expiry", [Ref("src/auth.ts", 23, 30)], date(2025, 3, 4))


def test_doubled_tag_is_read_away():
    category, text, _, promoted = parse_bullet(
        "- [PATTERN] [PATTERN] Always pin versions (promoted 2025-01-02)", tier="core"
    )
    assert (category, text, promoted) == ("PATTERN", "Always pin versions", date(2025, 1, 2))


def test_doubled_tag_is_never_written():
    assert working_line("PATTERN", "[PATTERN] Always pin versions") == "- [PATTERN] Always pin versions"


def test_different_second_tag_is_text():
    assert parse_bullet("- [PATTERN] [DECISION] x", tier="core")[:2] == ("PATTERN", "[DECISION] x")


def test_untagged_v1_bullet_is_a_working_lesson():
    assert parse_bullet("- Prefer small PRs", tier="working") == ("", "Prefer small PRs", [], None)


def test_lowercase_brackets_are_text_not_a_tag():
    assert parse_bullet("- [link](http://x) is dead", tier="working")[:2] == ("", "[link](http://x) is dead")


@pytest.mark.parametrize(
    "line, tier, problem",
    [
        ("- [NOTE] unknown", "working", "unknown category [NOTE]"),
        ("* star bullet", "working", "not a bullet"),
        ("- [TODO]", "working", "no lesson text"),
        ("- [TODO] x (ref: )", "working", "empty (ref: ) group"),
        ("- [TODO] x (ref: ../etc/passwd)", "working", "bad reference"),
        ("- [TODO] x (ref: a.py#L9-L2)", "working", "bad reference"),
        ("- [OBSERVATION] not for core", "core", "core lessons need one of"),
        ("- untagged in core", "core", "not no tag"),
        ("- [PATTERN] x (promoted 2025-13-01)", "core", "is not a date"),
        ("- [TODO] " + "x" * 2001, "working", "longer than 2000"),
    ],
)
def test_lines_that_cannot_be_read(line, tier, problem):
    with pytest.raises(LineError, match=re.escape(problem)):
        parse_bullet(line, tier=tier)


def test_working_sections_dates_and_unparsed_lines_keep_their_place():
    text = (
        "- early bullet\n"
        "## 2025-01-31 [OBSERVATION]\n"
        "- [OBSERVATION] one\n"
        "stray text\n"
        "\n"
        "## 2025-02-01\n"
        "- two\r\n"
        "## 2025-02-30\n"
        "- [TODO] three\n"
    )
    lines = parse_working(text, "p/memories/x/working.md")
    assert [(line.line_no, line.text, line.lesson_date, line.section, line.unparsed) for line in lines] == [
        (1, "early bullet", None, 0, False),
        (3, "one", date(2025, 1, 31), 1, False),
        (4, "stray text", date(2025, 1, 31), 1, True),
        (7, "two", date(2025, 2, 1), 2, False),
        (8, "## 2025-02-30", date(2025, 2, 1), 2, True),
        (9, "three", date(2025, 2, 1), 2, False),
    ]
    assert lines[2].where == "p/memories/x/working.md:4"
    assert lines[2].raw_line == "stray text"


def test_core_lines_numbered_and_unparsed_kept_verbatim():
    lines = parse_core("- [DECISION] a (promoted 2025-01-01)\n\n  indented junk  \n- [PATTERN] b\n")
    assert [(line.line_no, line.unparsed, line.lesson_date) for line in lines] == [
        (1, False, date(2025, 1, 1)),
        (3, True, None),
        (4, False, None),
    ]
    assert lines[1].raw_line == "  indented junk  "


@pytest.mark.parametrize(
    "folder, name, moment",
    [
        ("Maya-1700000000000", "Maya", datetime(2023, 11, 14, 22, 13, 20, tzinfo=UTC)),
        ("Maya Lopez-1700000000", "Maya Lopez", datetime(2023, 11, 14, 22, 13, 20, tzinfo=UTC)),
        ("Ана-2025-01-31T10-20-30-123Z", "Ана", datetime(2025, 1, 31, 10, 20, 30, tzinfo=UTC)),
        ("Maya-2", "Maya-2", None),
        ("Just a name", "Just a name", None),
    ],
)
def test_archived_folder_names(folder, name, moment):
    assert split_archived_folder(folder) == (name, moment)


def test_archived_folder_name_reads_back():
    moment = datetime(2025, 5, 6, 7, 8, 9, 123000, tzinfo=UTC)
    assert split_archived_folder(archived_folder_name("Carlos-2", moment)) == ("Carlos-2", moment)
    epoch = datetime(1970, 1, 1, tzinfo=UTC)
    assert split_archived_folder(archived_folder_name("Old", epoch)) == ("Old", epoch)
