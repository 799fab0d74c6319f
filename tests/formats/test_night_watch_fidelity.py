"""Trees Night Watch itself writes come back byte for byte, under the very folder names it looks up.

The trees are built by hand from the format in DESIGN.md §2: folder names with spaces, dots and
decomposed Unicode, an archived persona sharing an active persona's name, a compacted working.md
without date sections, a promoted core with doubled tags and a section Night Watch's promotion
left empty. The only differences allowed are the normalisations the README lists.
"""

import unicodedata
from datetime import date

import pytest

from memory.models import Lesson
from personas.models import Persona, Project
from personas.services import persona_rename
from tests.factories import MemoryFactory, PersonaFactory, ProjectFactory, make_lesson
from tests.formats.conftest import tree_bytes, write_tree

pytestmark = pytest.mark.django_db

ZOE_NFD = unicodedata.normalize("NFD", "Zoë")
CAFE_NFD = unicodedata.normalize("NFD", "café app")

HEADERLESS = (
    "- [PATTERN] Build the docs with the pinned mkdocs (ref: mkdocs.yml)\n- [DECISION] Versioned docs live under /v/\n"
)

# Exactly as Night Watch leaves them; the files below are expected back unchanged.
UNCHANGED = {
    "Dev/memories/docs.site/working.md": (
        HEADERLESS + "\n## 2026-01-05 [OBSERVATION]\n- [OBSERVATION] The search index is rebuilt nightly\n\n"
    ),
    f"{ZOE_NFD}/memories/{CAFE_NFD}/working.md": HEADERLESS,
    f"{ZOE_NFD}/memories/{CAFE_NFD}/core.md": "- [ARCHITECTURE] Orders are event sourced (promoted 2026-01-02)\n",
    ".archived/Dev-1771500000000/memories/billing api/working.md": (
        "## 2025-12-01 [TODO]\n- [TODO] The old Dev's unfinished refund script\n\n"
    ),
}

# Written by Night Watch's promotion: doubled tag, `#L3-L3`, two ref groups, an emptied section and
# a header whose tag was the promoted bullet's.
PROMOTED_CORE = (
    "- [PATTERN] [PATTERN] Idempotency keys guard every charge (ref: src/charge.ts#L3-L3) (promoted 2026-02-10)\n"
    "- [DECISION] Refunds go through the ledger (promoted 2026-02-11)\n"
    "- [PATTERN] Written by hand, never promoted\n"
)
PROMOTED_WORKING = (
    "## 2026-02-01 [PATTERN]\n"
    "\n"
    "## 2026-02-02 [PATTERN]\n"
    "- [OBSERVATION] Webhooks arrive twice (ref: src/hooks.ts#L10-L12) (ref: src/retry.ts)\n"
    "\n"
    "## 2026-02-03 [OBSERVATION]\n"
    "- [OBSERVATION] The test clock drifts\n"
    "\n"
)
NORMALISED = {
    "Dev/memories/billing api/core.md": (
        "- [PATTERN] Idempotency keys guard every charge (ref: src/charge.ts#L3) (promoted 2026-02-10)\n"
        "- [DECISION] Refunds go through the ledger (promoted 2026-02-11)\n"
        "- [PATTERN] Written by hand, never promoted\n"
    ),
    "Dev/memories/billing api/working.md": (
        "## 2026-02-02 [PATTERN]\n"
        "- [OBSERVATION] Webhooks arrive twice (ref: src/hooks.ts#L10-L12, src/retry.ts)\n"
        "\n"
        "## 2026-02-03 [OBSERVATION]\n"
        "- [OBSERVATION] The test clock drifts\n"
        "\n"
    ),
}
TREE = {
    **UNCHANGED,
    "Dev/memories/billing api/core.md": PROMOTED_CORE,
    "Dev/memories/billing api/working.md": PROMOTED_WORKING,
}


def _missing_or_empty(files):
    # Export writes both files of every memory; a file the source did not have comes back empty.
    return {path: data for path, data in files.items() if data}


@pytest.fixture
def imported(tmp_path, run_command):
    src = write_tree(tmp_path / "src", TREE)
    run_command("import_memory", str(src))
    return src


def test_export_writes_every_folder_name_exactly_as_imported(imported, tmp_path, run_command):
    run_command("export_memory", str(tmp_path / "out"))
    out = _missing_or_empty(tree_bytes(tmp_path / "out"))
    expected = {path: text.encode() for path, text in {**UNCHANGED, **NORMALISED}.items()}
    assert sorted(out) == sorted(expected)  # spaces, dots, decomposed Unicode, the archived folder's own name
    assert out == expected


def test_url_slugs_are_derived_apart_from_folder_names(imported):
    assert {p.folder_name or p.slug: p.slug for p in Project.objects.all()} == {
        "billing api": "billing-api",
        "docs.site": "docs-site",
        CAFE_NFD: "café-app",
    }
    zoe = Persona.objects.get(name="Zoë")  # looked up in the composed form
    assert zoe.memory_folder == ZOE_NFD


def test_archived_persona_sharing_an_active_name_keeps_its_folder(imported, tmp_path, run_command):
    archived = Persona.objects.get(archived_at__isnull=False)
    assert archived.archived_folder == "Dev-1771500000000"
    run_command("export_memory", str(tmp_path / "out"))
    assert [p.name for p in (tmp_path / "out/.archived").iterdir()] == ["Dev-1771500000000"]
    run_command("import_memory", str(tmp_path / "out"))
    assert Persona.objects.filter(archived_at__isnull=False).count() == 1


def test_undated_lessons_stay_undated_and_first(imported, tmp_path, run_command):
    undated = Lesson.objects.filter(undated=True, tier="working")
    assert sorted(undated.values_list("text", flat=True)) == sorted(
        ["Build the docs with the pinned mkdocs", "Versioned docs live under /v/"] * 2
    )
    assert Lesson.objects.get(text="Written by hand, never promoted").undated
    run_command("export_memory", str(tmp_path / "out"))
    working = (tmp_path / "out/Dev/memories/docs.site/working.md").read_text()
    assert working.count("## ") == 1 and working.startswith(HEADERLESS)
    assert f"## {date.today().isoformat()}" not in "".join(p.read_text() for p in (tmp_path / "out").rglob("*.md"))


def test_exporting_over_the_source_tree_rewrites_only_normalised_files(imported, run_command):
    before = tree_bytes(imported)
    out = run_command("export_memory", str(imported))
    assert "2 written, 2 replaced" in out  # the two written are empty core.md files (a normalisation)
    after = _missing_or_empty({path: data for path, data in tree_bytes(imported).items() if ".bak-" not in path})
    assert after == {**before, **{path: text.encode() for path, text in NORMALISED.items()}}
    assert "Added 0 lesson(s) in 4 memories; 12 already present." in run_command("import_memory", str(imported))


def test_a_renamed_persona_is_exported_under_its_new_name(imported, tmp_path, run_command):
    persona_rename(persona=Persona.objects.get(name="Zoë"), new_name="Zoe")
    run_command("export_memory", str(tmp_path / "out"))
    assert (tmp_path / "out/Zoe/memories" / CAFE_NFD / "core.md").is_file()


def test_names_new_to_the_product_get_the_folder_night_watch_would_use(tmp_path, run_command):
    memory = MemoryFactory(persona=PersonaFactory(name="Vera Ng"), project=ProjectFactory(slug="night-watch"))
    make_lesson(memory, "A lesson", category="TODO")
    run_command("export_memory", str(tmp_path))
    assert (tmp_path / "Vera Ng/memories/night-watch/working.md").is_file()


def test_a_dotted_folder_and_its_slug_twin_stay_two_projects(tmp_path, run_command):
    src = write_tree(
        tmp_path / "src",
        {
            "Dev/memories/docs-site/working.md": "## 2026-01-01 [TODO]\n- [TODO] dashed\n\n",
            "Dev/memories/docs.site/working.md": "## 2026-01-01 [TODO]\n- [TODO] dotted\n\n",
        },
    )
    run_command("import_memory", str(src))
    assert sorted(Project.objects.values_list("slug", "folder_name")) == [
        ("docs-site", ""),
        ("docs-site-2", "docs.site"),
    ]
    run_command("export_memory", str(tmp_path / "out"))
    assert _missing_or_empty(tree_bytes(tmp_path / "out")) == tree_bytes(src)


def test_compiled_memory_within_budget_is_the_exported_files(imported, tmp_path, run_command):
    from memory.models import Memory
    from memory.selectors import compile_memory

    run_command("export_memory", str(tmp_path / "out"))
    for memory in Memory.objects.select_related("persona", "project"):
        folder = tmp_path / "out" / memory.persona.memory_folder / "memories" / memory.project.memory_folder
        if memory.persona.archived_at:
            folder = (
                tmp_path / "out/.archived" / memory.persona.archived_folder / "memories" / memory.project.memory_folder
            )
        core, working = ((folder / name).read_text() for name in ("core.md", "working.md"))
        expected = f"## Core Lessons\n{core}\n## Working Memory\n{working}"
        assert compile_memory(memory).text.rstrip() == expected.rstrip(), memory


def test_undated_lessons_bring_no_invented_date_to_promotion_detection(tmp_path, run_command):
    from memory.models import Memory
    from memory.promotions.services import promotion_detect

    lesson = "- [PATTERN] Webhook handlers verify the signature before parsing the payload (ref: src/hooks.ts)\n"
    src = write_tree(
        tmp_path / "src",
        {
            "Dev/memories/api/working.md": lesson
            + "\n## 2026-01-01 [PATTERN]\n"
            + lesson
            + "\n## 2026-01-02 [PATTERN]\n"
            + lesson
            + "\n",
        },
    )
    run_command("import_memory", str(src))
    # Two real dates and one undated copy: under the threshold of three distinct dates.
    assert promotion_detect(memory=Memory.objects.get()).created == []


def test_a_project_imported_before_folder_names_were_kept_is_found_again(tmp_path, run_command):
    earlier = Project.objects.create(slug="billing-api", name="billing api")  # what an older import made
    src = write_tree(tmp_path / "src", {"Dev/memories/billing api/working.md": "## 2026-01-01 [TODO]\n- [TODO] x\n\n"})
    run_command("import_memory", str(src))
    assert list(Project.objects.values_list("pk", "folder_name")) == [(earlier.pk, "billing api")]
    run_command("export_memory", str(tmp_path / "out"))
    assert (tmp_path / "out/Dev/memories/billing api/working.md").read_bytes() == (
        src / "Dev/memories/billing api/working.md"
    ).read_bytes()
