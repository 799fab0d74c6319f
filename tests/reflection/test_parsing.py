"""Parsing a reflection answer into lessons."""

import pytest

from memory.reflection.parsing import ReflectionParseError, is_vague, parse_reflection
from memory.refs import Ref


def test_bullets_with_tags_and_refs():
    lessons = parse_reflection(
        "- [PATTERN] Auth middleware skips the expiry check on refresh tokens (ref: src/auth/middleware.ts#L23-L30)\n"
        "- [todo] Add backoff to worker.retry() (ref: src/queue/worker.ts#L88, src/queue/config.ts)\n"
        "* [DECISION] Event sourcing for the audit trail: compliance needs full replay\n"
    )
    assert [(lesson.category, lesson.text) for lesson in lessons] == [
        ("PATTERN", "Auth middleware skips the expiry check on refresh tokens"),
        ("TODO", "Add backoff to worker.retry()"),
        ("DECISION", "Event sourcing for the audit trail: compliance needs full replay"),
    ]
    assert lessons[0].refs == [Ref("src/auth/middleware.ts", 23, 30)]
    assert lessons[1].refs == [Ref("src/queue/worker.ts", 88), Ref("src/queue/config.ts")]
    assert lessons[2].refs == [] and lessons[2].vague is True


def test_preamble_fences_and_blank_lines_are_ignored():
    answer = "Here is what I learned:\n```\n\n- [OBSERVATION] Fixed 1s retry delay in worker.ts\n```\n"
    assert [lesson.text for lesson in parse_reflection(answer)] == ["Fixed 1s retry delay in worker.ts"]


def test_doubled_tag_is_read_once():
    assert (
        parse_reflection("- [PATTERN] [PATTERN] Views are thin in api/views.py")[0].text
        == "Views are thin in api/views.py"
    )


def test_numbered_bullets_are_accepted():
    assert len(parse_reflection("1. [TODO] Pin redis to 7.2\n2) [HYPOTHESIS] The flake comes from test_sync.py")) == 2


def test_five_is_the_limit():
    five = "\n".join(f"- [OBSERVATION] Lesson {i} in mod{i}.py" for i in range(5))
    assert len(parse_reflection(five)) == 5
    with pytest.raises(ReflectionParseError, match="6 bullets"):
        parse_reflection(five + "\n- [TODO] one more in x.py")


@pytest.mark.parametrize(
    "answer, message",
    [
        ("", "no bullets"),
        ("I have nothing to add.", "no bullets"),
        ("- [GOSSIP] The team likes tabs", "unknown category"),
        ("- [] Empty tag", "unknown category"),
        ("- Consider improving error handling", "no \\[CATEGORY\\] tag"),
        ("- [PATTERN] good in a.py\n- untagged second bullet", "no \\[CATEGORY\\] tag"),
        ("- [PATTERN] (ref: a.py#L1)", "no lesson text"),
        ("- [PATTERN] Bad range (ref: a.py#L9-L3)", "bad reference"),
        ("- [PATTERN] Escapes the repo (ref: ../../etc/passwd)", "bad reference"),
        ("- [PATTERN] " + "x" * 2001, "longer than"),
    ],
)
def test_malformed_answers(answer, message):
    with pytest.raises(ReflectionParseError, match=message):
        parse_reflection(answer)


@pytest.mark.parametrize(
    "text, vague",
    [
        ("Consider improving error handling", True),
        ("The code could use better testing", True),
        ("Security should be reviewed", True),
        ("Retry uses a fixed 1s delay", False),
        ("worker.ts retries without backoff", False),
        ("export_orders pages without ordering", False),
        ("getUser() caches forever", False),
        ("The `Session` model keeps tokens", False),
        ("Settings live in nightwatch/settings.py", False),
        ("MAX_MEMORY_LINES is enforced late", False),
        ("RateLimiter is bypassed for SSO", False),
    ],
)
def test_vague_detection(text, vague):
    assert is_vague(text) is vague


def test_a_ref_makes_a_lesson_specific():
    lesson = parse_reflection("- [OBSERVATION] Error handling is inconsistent here (ref: src/api.py#L5)")[0]
    assert lesson.vague is False
