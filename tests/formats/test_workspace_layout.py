"""The workspace layout: export, import into an empty store, export again — the same files."""

from pathlib import Path

from django.core.management import call_command

from memory.models import Lesson, Memory
from personas.models import Persona
from tests.factories import make_lesson


def files_under(root):
    return {
        p.relative_to(root).as_posix(): p.read_text()
        for p in sorted(Path(root).rglob("*"))
        if p.is_file() and ".bak-" not in p.name
    }


def test_round_trip_through_the_workspace_layout(memory, tmp_path, django_db_blocker):
    make_lesson(memory, "Orders use UUIDv7 keys", tier="core", category="DECISION", refs="db/schema.sql#L10-L12")
    make_lesson(memory, "Run make lock after adding a dependency", tier="core", category="PATTERN")
    make_lesson(memory, "The API gateway delegates auth to the identity service", tier="core", category="ARCHITECTURE")
    make_lesson(memory, "Nightly load finished in 14 minutes", category="OBSERVATION")
    make_lesson(memory, "Retries hide ordering bugs", category="PATTERN")
    make_lesson(memory, "Loader crashed on empty file — error: ValueError: no columns", category="OBSERVATION")
    make_lesson(memory, "Add a dry-run flag to the loader", category="TODO")
    out = tmp_path / "first"
    call_command("export_memory", str(out), "--layout", "workspace")
    first = files_under(out)
    base = f"{memory.persona.name}/{memory.project.slug}"
    assert set(first) == {
        f"{base}/{n}"
        for n in (
            "SOUL.md",
            "MEMORY.md",
            "TOOLS.md",
            "AGENTS.md",
            "memory/2026-01-01.md",
            ".learnings/LEARNINGS.md",
            ".learnings/ERRORS.md",
            ".learnings/FEATURE_REQUESTS.md",
        )
    }
    assert (
        "- [DECISION] Orders use UUIDv7 keys (ref: db/schema.sql#L10-L12) (promoted 2026-01-01)"
        in first[f"{base}/MEMORY.md"]
    )
    assert "## 2026-01-01\n- [TODO] Add a dry-run flag to the loader" in first[f"{base}/.learnings/FEATURE_REQUESTS.md"]

    persona_name, slug = memory.persona.name, memory.project.slug
    Lesson.objects.all().delete()
    Memory.objects.all().delete()
    call_command("import_memory", str(out), "--layout", "workspace")
    imported = Memory.objects.get(persona__name=persona_name, project__slug=slug)
    assert imported.lessons.filter(tier="core").count() == 3 and imported.lessons.filter(tier="working").count() == 4
    again = tmp_path / "second"
    call_command("export_memory", str(again), "--layout", "workspace")
    assert files_under(again) == first
    # importing the same files again adds nothing
    call_command("import_memory", str(out), "--layout", "workspace")
    assert imported.lessons.count() == 7


def test_untagged_bullets_take_the_category_of_their_file(db, tmp_path):
    ws = tmp_path / "Ada" / "shop"
    (ws / "memory").mkdir(parents=True)
    (ws / ".learnings").mkdir()
    (ws / "SOUL.md").write_text("# Ada\nCareful reviewer.\n")
    (ws / "MEMORY.md").write_text("# Facts\n- This project uses TypeScript\n")
    (ws / "TOOLS.md").write_text("- Use rg, not grep -r\n")
    (ws / "memory" / "2026-02-03.md").write_text("# 2026-02-03\n- Fixed the login redirect\nfree prose here\n")
    (ws / ".learnings" / "ERRORS.md").write_text("## 2026-02-04\n- Build broke — error: TS2322\n")
    call_command("import_memory", str(tmp_path), "--layout", "workspace")
    persona = Persona.objects.get(name="Ada")
    got = {
        (lesson.tier, lesson.category, lesson.text, lesson.lesson_date.isoformat(), lesson.unparsed)
        for lesson in Lesson.objects.filter(memory__persona=persona)
    }
    assert (
        "core",
        "DECISION",
        "This project uses TypeScript",
        got and next(d for t, c, x, d, u in got if x == "This project uses TypeScript"),
        False,
    ) in got
    assert any(c == "PATTERN" and t == "core" and x == "Use rg, not grep -r" for t, c, x, d, u in got)
    assert ("working", "OBSERVATION", "Fixed the login redirect", "2026-02-03", False) in got
    assert ("working", "OBSERVATION", "Build broke — error: TS2322", "2026-02-04", False) in got
    assert any(u and x == "free prose here" for t, c, x, d, u in got)
