"""import → export → import gives the same lessons; export → import → export gives the same bytes."""

from datetime import date

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory.models import Lesson
from memory.services import Actor, lesson_create
from personas.models import Persona, Project
from tests.factories import MemoryFactory, PersonaFactory, ProjectFactory
from tests.formats.conftest import stored_lessons, tree_bytes, write_tree

pytestmark = pytest.mark.django_db

RICH_TREE = {
    "Maya Lopez/memories/night-watch-cli/core.md": (
        "- [PATTERN] [PATTERN] Refresh tokens skip the expiry check (ref: src/auth.ts#L23-L30) (promoted 2025-02-10)\n"
        "- [DECISION] Event sourcing for audit (ref: a.ts#L1, b.ts#L2) (ref: c.ts) (promoted 2025-02-11)\n"
        "- [ARCHITECTURE] No promoted day here\n"
        "- [TODO] not a core category\n"
    ),
    "Maya Lopez/memories/night-watch-cli/working.md": (
        "- [OBSERVATION] Before any header\n"
        "## 2025-01-31 [OBSERVATION]\n"
        "- [OBSERVATION] Retry uses a fixed 1s delay (ref: src/queue/worker.ts#L88-L95)\n"
        "- [TODO] Add backoff (ref: src/queue/worker.ts#L90)\n"
        "free text that is not a bullet\n"
        "\n"
        "## 2025-02-03 [HYPOTHESIS]\n"
        "- [HYPOTHESIS] Same words twice\n"
        "- [HYPOTHESIS] Same words twice\n"
        "- [NOTE] unknown tag\n"
        "\n"
        "## 2025-02-04\n"
        "- untagged v1 bullet\n"
    ),
    "Дмитрий/memories/café-app/main.md": "## 2024-12-01\n- old lesson one\n- old lesson two (ref: x.py#L4)\n",
    "Zoë Ångström/memories/My Project/working.md": "## 2025-03-01 [TODO]\n- [TODO] ünïcödé ✓\n",
    ".archived/Carlos-1700000000000/memories/night-watch-cli/core.md": "- [ARCHITECTURE] Archived lesson (promoted 2024-01-01)\n",
    ".archived/Maya Lopez-1600000000000/memories/night-watch-cli/working.md": "## 2020-01-01\n- [TODO] from the old Maya\n",
}


def _wipe():
    # A fresh store for the second half of a round trip (tests only: the product never hard-deletes).
    Persona.objects.all().delete()
    Project.objects.all().delete()


def test_import_export_import_gives_the_same_lessons(tmp_path, run_command):
    src = write_tree(tmp_path / "src", RICH_TREE)
    untouched = tree_bytes(src)
    run_command("import_memory", str(src))
    assert tree_bytes(src) == untouched  # importing reads; it never renames, creates or rewrites a file
    first = stored_lessons()
    assert len(first) == 17
    run_command("export_memory", str(tmp_path / "out"))
    _wipe()
    run_command("import_memory", str(tmp_path / "out"))
    assert stored_lessons() == first


def test_importing_the_export_into_the_same_store_adds_nothing(tmp_path, run_command):
    src = write_tree(tmp_path / "src", RICH_TREE)
    run_command("import_memory", str(src))
    run_command("export_memory", str(tmp_path / "out"))
    out = run_command("import_memory", str(tmp_path / "out"))
    assert "Added 0 lesson(s)" in out


def test_export_import_export_gives_identical_bytes(tmp_path, run_command):
    src = write_tree(tmp_path / "src", RICH_TREE)
    run_command("import_memory", str(src))
    run_command("export_memory", str(tmp_path / "a"))
    _wipe()
    run_command("import_memory", str(tmp_path / "a"))
    run_command("export_memory", str(tmp_path / "b"))
    first, second = tree_bytes(tmp_path / "a"), tree_bytes(tmp_path / "b")
    assert len(first) == 10
    assert first == second
    assert b"[PATTERN] [PATTERN]" not in b"".join(first.values())


def test_export_over_its_own_tree_changes_nothing(tmp_path, run_command):
    src = write_tree(tmp_path / "src", RICH_TREE)
    run_command("import_memory", str(src))
    run_command("export_memory", str(tmp_path / "a"))
    before = tree_bytes(tmp_path / "a")
    run_command("import_memory", str(tmp_path / "a"))
    out = run_command("export_memory", str(tmp_path / "a"))
    assert "0 written, 0 replaced, 10 unchanged" in out
    assert tree_bytes(tmp_path / "a") == before


_words = st.text(alphabet=st.sampled_from("abcxyzÄéß日 -_.,:;!?'\"()[]#/✓"), min_size=1, max_size=40).filter(
    lambda t: t.strip()
)
_ref = st.builds(
    lambda path, start, span: f"{path}#L{start}" + (f"-L{start + span}" if span else ""),
    st.from_regex(r"[a-z]{1,6}(/[a-z0-9_]{1,6}){0,2}\.(py|ts|md)", fullmatch=True),
    st.integers(1, 500),
    st.integers(0, 20),
)
_lesson = st.tuples(
    st.sampled_from(["working", "core"]),
    st.sampled_from(["PATTERN", "DECISION", "ARCHITECTURE", "OBSERVATION", "HYPOTHESIS", "TODO"]),
    _words,
    st.lists(_ref, max_size=3),
    st.dates(min_value=date(2020, 1, 1), max_value=date(2030, 12, 31)),
    st.integers(1, 4),
)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lessons=st.lists(_lesson, min_size=1, max_size=12))
def test_any_stored_lessons_survive_export_import_export(tmp_path_factory, run_command, lessons):
    _wipe()
    memory = MemoryFactory(persona=PersonaFactory(name="Prop"), project=ProjectFactory(slug="prop"))
    actor = Actor.system("tests")
    for tier, category, text, refs, day, section in lessons:
        if tier == "core" and category not in ("PATTERN", "DECISION", "ARCHITECTURE"):
            category = "PATTERN"
        lesson_create(
            memory=memory,
            tier=tier,
            category=category,
            text=text,
            refs=refs,
            lesson_date=day,
            section=section,
            actor=actor,
        )
    stored = Lesson.objects.count()
    a, b = tmp_path_factory.mktemp("a"), tmp_path_factory.mktemp("b")
    run_command("export_memory", str(a))
    first = stored_lessons()
    _wipe()
    run_command("import_memory", str(a))
    assert Lesson.objects.count() == stored
    run_command("export_memory", str(b))
    assert tree_bytes(a) == tree_bytes(b)
    assert stored_lessons() == first
