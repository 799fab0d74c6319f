from datetime import date, timedelta

import pytest

from memory.formats.exporter import export_tree
from memory.formats.importer import memory_import_tree
from memory.formats.nightwatch import read_tree
from memory.models import Memory
from memory.selectors import compile_memory, compiled_memory_text
from memory.services import Actor
from personas.compiler import compile_system_prompt, compile_system_prompt_for
from tests.factories import make_lesson

pytestmark = pytest.mark.django_db


def test_empty_memory_compiles_to_nothing_and_prompt_is_unchanged(memory):
    assert compile_memory(memory).text == ""
    prompt = compile_system_prompt_for(memory.persona, memory.project)
    assert "## Core Lessons" not in prompt and "## Working Memory" not in prompt
    assert prompt == compile_system_prompt(memory.persona)


def test_core_then_working_in_file_format(memory):
    make_lesson(
        memory,
        "Auth middleware skips expiry on refresh tokens",
        category="PATTERN",
        tier="core",
        refs="src/auth/middleware.ts#L23-L30",
        day=date(2026, 1, 5),
    )
    make_lesson(memory, "Retry uses a fixed 1s delay", refs="src/queue/worker.ts#L88-L95", day=date(2026, 2, 1))
    text = compile_memory(memory).text
    assert text == (
        "## Core Lessons\n"
        "- [PATTERN] Auth middleware skips expiry on refresh tokens (ref: src/auth/middleware.ts#L23-L30)"
        " (promoted 2026-01-05)\n"
        "\n## Working Memory\n"
        "## 2026-02-01 [OBSERVATION]\n"
        "- [OBSERVATION] Retry uses a fixed 1s delay (ref: src/queue/worker.ts#L88-L95)\n"
        "\n"
    )


def test_working_budget_keeps_most_recent_whole_lessons(memory):
    memory.working_char_budget = 300
    memory.save()
    lessons = [make_lesson(memory, f"Observation {i} " + "x" * 60, day=date(2026, 1, i + 1)) for i in range(10)]
    compiled = compile_memory(memory)
    assert compiled.working_kept == [lesson.pk for lesson in lessons[-len(compiled.working_kept) :]]
    assert 0 < len(compiled.working_kept) < 10
    assert compiled.working_chars <= 300
    for lesson in lessons:  # never mid-lesson
        assert (lesson.text in compiled.text) == (lesson.pk in compiled.working_kept)


def test_core_budget_keeps_first_lessons(memory):
    memory.core_char_budget = 200
    memory.save()
    lessons = [make_lesson(memory, f"Pattern {i} " + "y" * 50, category="PATTERN", tier="core") for i in range(8)]
    compiled = compile_memory(memory)
    assert compiled.core_kept == [lesson.pk for lesson in lessons[: len(compiled.core_kept)]]
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


def _night_watch_reads(folder, core_budget=4000, working_budget=8000):
    """What Night Watch makes of a memory folder: each file under its heading, core cut to its first
    4,000 characters and working to its last 8,000."""
    core = (folder / "core.md").read_text(encoding="utf-8")
    working = (folder / "working.md").read_text(encoding="utf-8")
    return f"## Core Lessons\n{core[:core_budget]}\n## Working Memory\n{working[-working_budget:]}"


def _working_file(lessons, sections):
    """A working.md of `lessons` bullets in `sections` dated sections (headed by the tag of their
    first bullet), with mixed tags and refs."""
    categories = ["OBSERVATION", "TODO", "HYPOTHESIS", "PATTERN", "DECISION"]
    out, per = [], -(-lessons // sections)
    for i in range(lessons):
        category = categories[(i // per + i) % 5]
        if i % per == 0:
            if out:
                out.append("")
            out.append(f"## {(date(2026, 1, 1) + timedelta(days=i // per)).isoformat()} [{category}]")
        ref = f" (ref: src/mod_{i % 9}/file_{i}.py#L{i + 1}-L{i + 4})" if i % 3 else ""
        out.append(f"- [{category}] Lesson {i:02d}: the handler retries{ref}")
    return "\n".join(out) + "\n\n"


def test_a_memory_within_budget_compiles_to_what_night_watch_reads_from_its_files(tmp_path):
    # The header of every dated section and the blank line after it count once, not once per
    # lesson: 88 lessons in 11 sections just under the 8,000-character budget are all kept.
    working = _working_file(88, 11)
    pad = 7_950 - len(working)
    working = working.replace("the handler retries", "the handler retries" + "x" * (pad // 88), 88)
    assert 7_900 <= len(working) <= 8_000
    src = tmp_path / "src" / "Maya" / "memories" / "night-watch"
    src.mkdir(parents=True)
    (src / "working.md").write_text(working, encoding="utf-8")
    (src / "core.md").write_text(
        "".join(f"- [PATTERN] Core rule {i} (promoted 2025-12-{i + 1:02d})\n" for i in range(20)), encoding="utf-8"
    )
    memory_import_tree(tree=read_tree(tmp_path / "src"), actor=Actor.system("tests"))
    export_tree(root=tmp_path / "out")
    out = tmp_path / "out" / "Maya" / "memories" / "night-watch"
    assert (out / "working.md").read_text(encoding="utf-8") == working

    compiled = compile_memory(Memory.objects.get())
    assert len(compiled.working_kept) == 88 and compiled.working_cut == []
    assert len(compiled.core_kept) == 20 and compiled.core_cut == []
    assert compiled.working_chars == len(working)
    assert compiled.text == _night_watch_reads(out)


def test_over_budget_the_cut_is_at_a_lesson_boundary_and_never_past_the_budget(tmp_path, memory):
    memory.working_char_budget, memory.core_char_budget = 1_000, 300
    memory.save()
    for i in range(30):
        make_lesson(
            memory,
            f"Working lesson {i} about the retry loop",
            day=date(2026, 1, 1 + i // 4),
            section=i // 4,
            category=["OBSERVATION", "TODO", "ARCHITECTURE"][i % 3],
        )
        make_lesson(memory, f"Core lesson {i}", category="PATTERN", tier="core")
    compiled = compile_memory(memory)
    export_tree(root=tmp_path)
    folder = tmp_path / memory.persona.name / "memories" / memory.project.slug
    working_file = (folder / "working.md").read_text(encoding="utf-8")
    core_file = (folder / "core.md").read_text(encoding="utf-8")
    core_text, _, working_text = compiled.text.partition("\n## Working Memory\n")
    assert core_text == "## Core Lessons\n" + core_file[: len(core_text) - len("## Core Lessons\n")]
    assert core_file[len(core_text) - len("## Core Lessons\n") :].startswith("- [PATTERN] Core lesson")
    # Working keeps whole lessons from the end of the file: the one before would not fit.
    assert working_text and len(working_text) <= 1_000 < len(working_file)
    kept = len(compiled.working_kept)
    assert 0 < kept < 30 and compiled.working_chars == len(working_text)
    assert all(f"Working lesson {i} " in working_text for i in range(30 - kept, 30))
    assert f"Working lesson {29 - kept} " not in working_text


def test_sections_out_of_id_order_never_pass_the_budget(memory):
    # A compaction's line keeps the section of the lessons it replaced: newest by id, early in the file.
    memory.working_char_budget = 400
    memory.save()
    for i in range(12):
        make_lesson(memory, f"Appended lesson {i} about the retry loop", day=date(2026, 2, 1 + i), section=10 + i)
    compacted = make_lesson(memory, "Compacted line about the queue worker", day=date(2026, 1, 1), section=1)
    critical = make_lesson(memory, "Critical line", day=date(2026, 1, 2), section=2, relevance="critical")
    compiled = compile_memory(memory)
    working_text = compiled.text.partition("## Working Memory\n")[2]
    assert compiled.working_chars == len(working_text) <= 400
    assert critical.pk in compiled.working_kept and compacted.pk in compiled.working_kept
    assert working_text.index("Compacted line") < working_text.index("Appended lesson 11")
