"""Invalid arguments are tool errors that say what is wrong, and nothing is written."""

import pytest

from memory.models import ChangeBatch, Interaction, Lesson, Memory
from tests.mcp.conftest import text_of

pytestmark = pytest.mark.django_db(transaction=True)

CASES = {
    "blank text": ("save_fact", {"text": "   "}, "text: Value error, must not be blank"),
    "two lines": ("log_learning", {"text": "first line\nsecond line"}, "text: Value error, must be a single line"),
    "category of another tool": ("save_fact", {"text": "A fact", "category": "OBSERVATION"}, "category"),
    "critical relevance": ("log_learning", {"text": "Urgent", "relevance": "critical"}, "relevance"),
    "missing error": ("log_error", {"text": "Something failed"}, "error"),
    "blank error": ("log_error", {"text": "Something failed", "error": "  "}, "error: Value error, must not be blank"),
    "ref outside the project": ("daily_log", {"text": "Progress", "refs": ["../etc/passwd"]}, "refs"),
    "too long": ("save_fact", {"text": "x" * 2001}, "text: String should have at most 2000 characters"),
    "blank summary": ("report_interaction", {"summary": " ", "trigger_type": "bug_fix"}, "summary"),
    "bad transcript": (
        "report_interaction",
        {"summary": "Did it", "trigger_type": "bug_fix", "transcript": [{"role": "user"}]},
        "transcript.0.id",
    ),
    "path escaping": ("find_lessons", {"path": "../secrets/"}, "path must be a file or folder inside the project"),
    "lesson id": ("recall", {"lesson_id": "forty-two"}, "lesson_id"),
}


def test_invalid_arguments_are_tool_errors_and_nothing_is_written(transport, make_token, persona, project):
    _, raw = make_token(persona, project)

    async def steps(client):
        return {label: await client.call_tool(name, args) for label, (name, args, _) in CASES.items()}

    results = transport.run(raw, steps)
    for label, (_, _, message) in CASES.items():
        result = results[label]
        assert result.is_error, label
        assert message in text_of(result), (label, text_of(result))
    assert "nothing was written" in text_of(results["blank text"])
    # Not even the memory the first write would have created.
    assert not Lesson.objects.exists() and not ChangeBatch.objects.exists()
    assert not Memory.objects.exists() and not Interaction.objects.exists()
