from datetime import date

import pytest

from memory.selectors import compile_memory, compiled_memory_text
from personas.compiler import compile_system_prompt, compile_system_prompt_for
from tests.factories import make_lesson

pytestmark = pytest.mark.django_db


def test_empty_memory_compiles_to_nothing_and_prompt_is_unchanged(memory):
    assert compile_memory(memory).text == ""
    prompt = compile_system_prompt_for(memory.persona, memory.project)
    assert "## Core Lessons" not in prompt and "## Working Memory" not in prompt
    assert prompt == compile_system_prompt(memory.persona)


def test_core_then_working_in_file_format(memory):
    make_lesson(memory, "Auth middleware skips expiry on refresh tokens", category="PATTERN", tier="core",
                refs="src/auth/middleware.ts#L23-L30", day=date(2026, 1, 5))
    make_lesson(memory, "Retry uses a fixed 1s delay", refs="src/queue/worker.ts#L88-L95", day=date(2026, 2, 1))
    text = compile_memory(memory).text
    assert text == (
        "## Core Lessons\n"
        "- [PATTERN] Auth middleware skips expiry on refresh tokens (ref: src/auth/middleware.ts#L23-L30)"
        " (promoted 2026-01-05)\n"
        "\n## Working Memory\n"
        "## 2026-02-01 [OBSERVATION]\n"
        "- [OBSERVATION] Retry uses a fixed 1s delay (ref: src/queue/worker.ts#L88-L95)\n"
    )


def test_working_budget_keeps_most_recent_whole_lessons(memory):
    memory.working_char_budget = 300
    memory.save()
    lessons = [make_lesson(memory, f"Observation {i} " + "x" * 60, day=date(2026, 1, i + 1)) for i in range(10)]
    compiled = compile_memory(memory)
    assert compiled.working_kept == [l.pk for l in lessons[-len(compiled.working_kept):]]
    assert 0 < len(compiled.working_kept) < 10
    assert compiled.working_chars <= 300
    for l in lessons:  # never mid-lesson
        assert (l.text in compiled.text) == (l.pk in compiled.working_kept)


def test_core_budget_keeps_first_lessons(memory):
    memory.core_char_budget = 200
    memory.save()
    lessons = [make_lesson(memory, f"Pattern {i} " + "y" * 50, category="PATTERN", tier="core") for i in range(8)]
    compiled = compile_memory(memory)
    assert compiled.core_kept == [l.pk for l in lessons[: len(compiled.core_kept)]]
    assert compiled.core_chars <= 200


def test_protected_and_critical_are_never_cut(memory):
    memory.working_char_budget = 150
    memory.save()
    old_protected = make_lesson(memory, "Old but protected " + "p" * 40, protected=True, day=date(2025, 1, 1))
    old_critical = make_lesson(memory, "Old but critical " + "c" * 40, relevance="critical", day=date(2025, 1, 2))
    for i in range(10):
        make_lesson(memory, f"Newer {i} " + "n" * 40, day=date(2026, 1, i + 1))
    compiled = compile_memory(memory)
    assert old_protected.pk in compiled.working_kept
    assert old_critical.pk in compiled.working_kept
    assert len(compiled.working_cut) > 0


def test_cache_follows_version(memory):
    assert compiled_memory_text(memory) == ""
    make_lesson(memory, "New lesson about src/a.py")
    memory.refresh_from_db()
    assert "New lesson" in compiled_memory_text(memory)


def test_override_replaces_persona_sections_but_memory_is_appended(memory):
    persona = memory.persona
    persona.soul = {"whoIAm": "A careful reviewer"}
    persona.save()
    make_lesson(memory, "Lesson about src/x.py")
    memory.refresh_from_db()
    prompt = compile_system_prompt_for(persona, memory.project)
    assert prompt.index("A careful reviewer") < prompt.index("## Core Lessons")
    persona.system_prompt_override = "Custom prompt."
    persona.save()
    prompt = compile_system_prompt_for(persona, memory.project)
    assert prompt.startswith("Custom prompt.\n\n## Core Lessons")
    assert "A careful reviewer" not in prompt
