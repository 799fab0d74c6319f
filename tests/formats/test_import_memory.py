"""python manage.py import_memory ROOT, against real files and the real database."""

import gc
from datetime import UTC, date, datetime

import pytest
from django.core.management.base import CommandError
from django.utils import timezone

from memory.formats import nightwatch
from memory.formats.importer import memory_import_tree
from memory.formats.nightwatch import parse_working as real_parse_working
from memory.formats.nightwatch import read_tree
from memory.models import Change, ChangeBatch, Lesson, Memory
from memory.services import Actor, batch_revert, lesson_update
from personas.models import Persona, Project
from tests.formats.conftest import stored_lessons, tree_bytes, write_tree

pytestmark = pytest.mark.django_db

WORKING = (
    "## 2025-01-31 [OBSERVATION]\n"
    "- [OBSERVATION] Retry uses a fixed 1s delay (ref: src/queue/worker.ts#L88-L95)\n"
    "- [TODO] Add exponential backoff (ref: src/queue/worker.ts#L90)\n"
    "\n"
    "## 2025-02-03 [HYPOTHESIS]\n"
    "- [HYPOTHESIS] Duplicate jobs come from the visibility timeout (ref: a.ts#L1, b.ts#L2) (ref: c.ts)\n"
    "\n"
)
CORE = (
    "- [PATTERN] [PATTERN] Refresh tokens skip the expiry check (ref: src/auth.ts#L23-L30) (promoted 2025-02-10)\n"
    "- [DECISION] Event sourcing for the audit trail (promoted 2025-02-11)\n"
)


@pytest.fixture
def tree(tmp_path):
    return write_tree(
        tmp_path / "agents",
        {
            "Maya/memories/night-watch-cli/working.md": WORKING,
            "Maya/memories/night-watch-cli/core.md": CORE,
        },
    )


def test_imports_lessons_with_tiers_categories_dates_and_refs(tree, run_command):
    out = run_command("import_memory", str(tree))
    assert "Maya / night-watch-cli: +2 core, +3 working, 0 already present [new persona, project, memory]" in out
    memory = Memory.objects.get(persona__name="Maya", project__slug="night-watch-cli")
    core = list(memory.lessons.core().order_by("id"))
    assert [(lesson.category, lesson.text, lesson.lesson_date) for lesson in core] == [
        ("PATTERN", "Refresh tokens skip the expiry check", date(2025, 2, 10)),
        ("DECISION", "Event sourcing for the audit trail", date(2025, 2, 11)),
    ]
    assert [r.as_text() for r in core[0].refs.all()] == ["src/auth.ts#L23-L30"]
    working = list(memory.lessons.working().order_by("id"))
    assert [(lesson.category, lesson.lesson_date) for lesson in working] == [
        ("OBSERVATION", date(2025, 1, 31)),
        ("TODO", date(2025, 1, 31)),
        ("HYPOTHESIS", date(2025, 2, 3)),
    ]
    assert working[0].section == working[1].section != working[2].section
    assert [r.as_text() for r in working[1].refs.all()] == ["src/queue/worker.ts#L90"]
    assert [r.as_text() for r in working[2].refs.all()] == ["a.ts#L1", "b.ts#L2", "c.ts"]
    assert memory.lessons.touching_path("src/queue/worker.ts").count() == 2


def test_one_import_batch_per_memory_with_history_and_one_version_bump(tree, run_command):
    run_command("import_memory", str(tree))
    memory = Memory.objects.get()
    batch = ChangeBatch.objects.get(memory=memory)
    assert batch.kind == ChangeBatch.Kind.IMPORT
    assert batch.changes.filter(action=Change.Action.CREATE).count() == 5
    assert memory.version == 1
    change = batch.changes.get(lesson__category="HYPOTHESIS")
    assert change.after["refs"] == ["a.ts#L1", "b.ts#L2", "c.ts"]


def test_import_reverts_as_a_unit_and_can_be_redone(tree, run_command):
    run_command("import_memory", str(tree))
    batch_revert(batch=ChangeBatch.objects.get(kind="import"), actor=Actor.system("tests"))
    assert not Lesson.objects.active().exists()
    out = run_command("import_memory", str(tree))
    assert "+2 core, +3 working" in out
    assert Lesson.objects.active().count() == 5


def test_importing_twice_adds_nothing(tree, run_command):
    run_command("import_memory", str(tree))
    before = stored_lessons()
    out = run_command("import_memory", str(tree))
    assert "+0 core, +0 working, 5 already present" in out
    assert "Added 0 lesson(s)" in out
    assert stored_lessons() == before
    assert ChangeBatch.objects.count() == 1 and Memory.objects.get().version == 1


def _import(root):
    return memory_import_tree(tree=read_tree(root), actor=Actor.system("tests"))


def test_an_unchanged_folder_is_skipped_until_its_files_or_its_memory_change(tree, run_command, monkeypatch):
    _import(tree)
    parsed = []
    monkeypatch.setattr(nightwatch, "parse_working", lambda *a, **k: parsed.append(a) or real_parse_working(*a, **k))
    again = _import(tree)
    (folder,) = again.memories
    assert folder.skipped and parsed == []  # not even parsed
    assert (folder.persona, folder.project, folder.added, folder.already_present) == ("Maya", "night-watch-cli", 0, 5)
    # The same report as a full comparison gives.
    assert "Maya / night-watch-cli: +0 core, +0 working, 5 already present" in run_command("import_memory", str(tree))

    # A lesson edited since: the memory's version moved, so lines are compared again and the file's
    # line, which no stored lesson matches any more, comes back.
    lesson = Lesson.objects.get(category="TODO")
    lesson_update(lesson=lesson, text="Add backoff with jitter", actor=Actor.system("tests"))
    third = _import(tree)
    assert not third.memories[0].skipped and third.added == 1 and parsed
    assert Lesson.objects.filter(text="Add exponential backoff").exists()
    assert _import(tree).memories[0].skipped

    # A file changed: its new line is added.
    path = tree / "Maya/memories/night-watch-cli/working.md"
    path.write_text(path.read_text() + "## 2025-03-01 [TODO]\n- [TODO] Pin the queue library\n\n", encoding="utf-8")
    fourth = _import(tree)
    assert not fourth.memories[0].skipped and fourth.added == 1

    # A reverted import is redone, as without the shortcut.
    batch_revert(batch=ChangeBatch.objects.filter(kind="import").order_by("-id").first(), actor=Actor.system("tests"))
    assert _import(tree).added == 1
    assert Lesson.objects.active().filter(text="Pin the queue library").count() == 1


def test_deleted_lessons_are_not_brought_back(tree, run_command):
    from memory.services import lesson_delete

    run_command("import_memory", str(tree))
    lesson_delete(lesson=Lesson.objects.get(category="TODO"), actor=Actor.system("tests"))
    run_command("import_memory", str(tree))
    assert Lesson.objects.filter(category="TODO").count() == 1


def test_new_lines_in_a_known_file_are_added_alone(tree, run_command):
    run_command("import_memory", str(tree))
    path = tree / "Maya/memories/night-watch-cli/working.md"
    path.write_text(path.read_text() + "## 2025-03-01 [TODO]\n- [TODO] Pin the queue library\n\n", encoding="utf-8")
    out = run_command("import_memory", str(tree))
    assert "+0 core, +1 working, 5 already present" in out


def test_same_text_on_another_date_is_a_new_lesson_and_duplicates_count(tmp_path, run_command):
    root = write_tree(
        tmp_path,
        {
            "P/memories/x/working.md": (
                "## 2025-01-01\n- [OBSERVATION] Same words\n- [OBSERVATION] Same words\n"
                "## 2025-01-02\n- [OBSERVATION] Same words\n"
            )
        },
    )
    run_command("import_memory", str(root))
    run_command("import_memory", str(root))
    assert sorted(Lesson.objects.values_list("lesson_date", flat=True)) == [
        date(2025, 1, 1),
        date(2025, 1, 1),
        date(2025, 1, 2),
    ]


def test_malformed_lines_are_kept_verbatim_and_reported_with_file_and_line(tmp_path, run_command):
    root = write_tree(
        tmp_path,
        {
            "Priya/memories/app/working.md": (
                "# My notes\n"
                "## 2025-01-05 [TODO]\n"
                "- [TODO] Real lesson\n"
                "- [NOTE] Unknown tag\n"
                "  continuation of something\n"
                "- [TODO] Bad ref (ref: ../../etc/passwd)\n"
            ),
            "Priya/memories/app/core.md": "- [OBSERVATION] Wrong tier for core\n",
        },
    )
    out = run_command("import_memory", str(root))
    assert "5 line(s) could not be parsed" in out
    assert "Priya/memories/app/core.md:1: core lessons need one of" in out
    assert "Priya/memories/app/working.md:1: not a bullet line" in out
    assert "Priya/memories/app/working.md:4: unknown category [NOTE]: - [NOTE] Unknown tag" in out
    assert "Priya/memories/app/working.md:5:" in out and "continuation of something" in out
    assert "Priya/memories/app/working.md:6: bad reference" in out
    unparsed = Lesson.objects.filter(unparsed=True).order_by("id")
    assert [lesson.raw_line for lesson in unparsed] == [
        "- [OBSERVATION] Wrong tier for core",
        "# My notes",
        "- [NOTE] Unknown tag",
        "  continuation of something",
        "- [TODO] Bad ref (ref: ../../etc/passwd)",
    ]
    assert all(lesson.category == "" for lesson in unparsed)
    assert not Lesson.objects.filter(refs__path__contains="passwd").exists()
    assert Lesson.objects.filter(unparsed=False).count() == 1
    # Reported again on the next import, and still not stored twice.
    out = run_command("import_memory", str(root))
    assert "Priya/memories/app/working.md:4:" in out
    assert Lesson.objects.count() == 6


def test_untagged_v1_bullets(tmp_path, run_command):
    root = write_tree(tmp_path, {"Dev/memories/app/working.md": "## 2024-12-01\n- Keep PRs small\n- Run the linter\n"})
    run_command("import_memory", str(root))
    assert list(Lesson.objects.values_list("tier", "category", "text", "unparsed")) == [
        ("working", "", "Keep PRs small", False),
        ("working", "", "Run the linter", False),
    ]


def test_legacy_main_md_is_read_as_working_and_never_touched(tmp_path, run_command):
    root = write_tree(
        tmp_path, {"Carlos/memories/legacy-app/main.md": "## 2024-11-02\n- Old v1 lesson (ref: app.py#L3)\n"}
    )
    before = tree_bytes(root)
    out = run_command("import_memory", str(root))
    assert "legacy main.md read as working.md" in out
    lesson = Lesson.objects.get()
    assert (lesson.tier, lesson.text, lesson.lesson_date) == ("working", "Old v1 lesson", date(2024, 11, 2))
    assert tree_bytes(root) == before  # no rename, no core.md created: the source tree is read only


def test_main_md_next_to_working_md_adds_only_what_working_lacks(tmp_path, run_command):
    root = write_tree(
        tmp_path,
        {
            "Carlos/memories/app/working.md": "## 2024-11-02\n- [OBSERVATION] Shared\n",
            "Carlos/memories/app/main.md": "## 2024-11-02\n- [OBSERVATION] Shared\n- Only in main\n",
        },
    )
    out = run_command("import_memory", str(root))
    assert "1 line(s) only in main.md were imported" in out
    assert sorted(Lesson.objects.values_list("text", flat=True)) == ["Only in main", "Shared"]


def test_archived_folders_become_archived_personas(tmp_path, run_command):
    root = write_tree(
        tmp_path,
        {
            ".archived/Old Reviewer-1700000000000/memories/app/core.md": "- [PATTERN] Archived wisdom (promoted 2023-01-01)\n",
            ".archived/Maya-1700000000000/memories/app/working.md": "## 2023-01-01\n- [TODO] archived maya\n",
            "Maya/memories/app/working.md": "## 2025-01-01\n- [TODO] current maya\n",
        },
    )
    out = run_command("import_memory", str(root))
    old = Persona.objects.get(name="Old Reviewer")
    assert old.archived_at == datetime(2023, 11, 14, 22, 13, 20, tzinfo=UTC)
    assert "Old Reviewer (archived) / app: +1 core" in out
    # An archived folder whose name is now an active persona stays apart from it.
    assert Persona.objects.get(name="Maya").archived_at is None
    apart = Persona.objects.get(name="Maya-1700000000000")
    assert apart.archived_at is not None
    assert Lesson.objects.get(text="archived maya").memory.persona == apart
    run_command("import_memory", str(root))
    assert Persona.objects.count() == 3 and Lesson.objects.count() == 3


def test_unicode_and_spaced_names(tmp_path, run_command):
    root = write_tree(
        tmp_path,
        {
            "Zoë Ångström/memories/café-app/working.md": "## 2025-01-01\n- [TODO] ünïcödé lesson ✓ (ref: src/ñ.py#L1)\n",
            "Дмитрий Иванов/memories/My Project/core.md": "- [DECISION] 日本語の決定 (promoted 2025-01-02)\n",
        },
    )
    out = run_command("import_memory", str(root))
    assert Persona.objects.filter(name="Zoë Ångström").exists()
    assert Project.objects.filter(slug="café-app").exists()
    project = Project.objects.get(name="My Project")
    assert project.slug == "my-project"
    assert "project folder 'My Project' has the URL slug 'my-project'" in out
    assert Lesson.objects.get(tier="core").text == "日本語の決定"
    assert Lesson.objects.get(tier="working").refs.get().path == "src/ñ.py"
    run_command("import_memory", str(root))
    assert Lesson.objects.count() == 2 and Project.objects.count() == 2


def test_decomposed_unicode_folder_names_match_composed_personas(tmp_path, run_command):
    import unicodedata

    Persona.objects.create(name="Zoë")
    root = write_tree(tmp_path, {unicodedata.normalize("NFD", "Zoë") + "/memories/app/working.md": "- [TODO] x\n"})
    run_command("import_memory", str(root))
    assert Persona.objects.count() == 1


def test_existing_persona_matches_case_insensitively(tmp_path, run_command):
    Persona.objects.create(name="Maya", role="Security Reviewer")
    root = write_tree(tmp_path, {"maya/memories/app/working.md": "## 2025-01-01\n- [TODO] x\n"})
    out = run_command("import_memory", str(root))
    assert "new persona" not in out
    assert Persona.objects.get().role == "Security Reviewer"


@pytest.mark.parametrize(
    "layout, message",
    [
        (None, "does not exist"),
        ({}, "holds no Night Watch memory folders"),
        ({"Maya/notes.txt": "hello"}, "holds no Night Watch memory folders"),
    ],
)
def test_bad_root_is_a_clear_error_and_writes_nothing(tmp_path, run_command, layout, message):
    root = tmp_path / "root"
    if layout is not None:
        root.mkdir()
        write_tree(root, layout)
    with pytest.raises(CommandError, match=message):
        run_command("import_memory", str(root))
    assert not Persona.objects.exists() and not Lesson.objects.exists()


def test_root_that_is_a_file(tmp_path, run_command):
    path = tmp_path / "file.md"
    path.write_text("- [TODO] x\n")
    with pytest.raises(CommandError, match="is not a folder"):
        run_command("import_memory", str(path))


def test_one_bad_file_stops_the_whole_import(tmp_path, run_command):
    root = write_tree(tmp_path, {"A/memories/app/working.md": "## 2025-01-01\n- [TODO] fine\n"})
    bad = root / "B/memories/app/working.md"
    bad.parent.mkdir(parents=True)
    bad.write_bytes(b"- [TODO] caf\xe9\n")
    with pytest.raises(CommandError, match=r"B/memories/app/working.md is not UTF-8 text"):
        run_command("import_memory", str(root))
    assert not Lesson.objects.exists() and not Persona.objects.exists()


def test_a_persona_name_too_long_rolls_everything_back(tmp_path, run_command):
    root = write_tree(
        tmp_path,
        {
            "A/memories/app/working.md": "- [TODO] fine\n",
            ("N" * 101) + "/memories/app/working.md": "- [TODO] x\n",
        },
    )
    with pytest.raises(CommandError, match="a persona name must be 1 to 100 characters"):
        run_command("import_memory", str(root))
    assert not Lesson.objects.exists() and not Persona.objects.exists()


def test_dry_run_reports_and_writes_nothing(tree, run_command):
    out = run_command("import_memory", str(tree), "--dry-run")
    assert "Would add 5 lesson(s)" in out
    assert not Lesson.objects.exists() and not Persona.objects.exists()


def test_undated_lines_take_the_import_day_and_stay_idempotent(tmp_path, run_command):
    root = write_tree(
        tmp_path,
        {
            "A/memories/app/working.md": "- [TODO] before any header\n",
            "A/memories/app/core.md": "- [PATTERN] no promoted day\n",
        },
    )
    run_command("import_memory", str(root))
    assert set(Lesson.objects.values_list("lesson_date", flat=True)) == {timezone.localdate()}
    Lesson.objects.update(lesson_date=date(2020, 1, 1))  # as if imported long ago
    run_command("import_memory", str(root))
    assert Lesson.objects.count() == 2


def test_features_are_woken_only_when_asked(tree, run_command, django_capture_on_commit_callbacks):
    from memory.signals import working_lessons_added

    received = []

    def receiver(sender, memory_id, lesson_ids, **kwargs):
        received.append((memory_id, sorted(lesson_ids)))

    working_lessons_added.connect(receiver)
    try:
        with django_capture_on_commit_callbacks(execute=True):
            run_command("import_memory", str(tree))
        assert received == []
        (tree / "Maya/memories/night-watch-cli/working.md").write_text(
            WORKING + "## 2025-04-01 [TODO]\n- [TODO] One more\n", encoding="utf-8"
        )
        with django_capture_on_commit_callbacks(execute=True):
            run_command("import_memory", str(tree), "--notify")
    finally:
        working_lessons_added.disconnect(receiver)
    new = Lesson.objects.get(text="One more")
    assert received == [(new.memory_id, [new.pk])]


def test_the_import_page_cache_is_for_the_import_only(tree):
    from django.db import connection

    if connection.vendor != "sqlite":
        pytest.skip("SQLite's page cache")
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA cache_size")
        before = cursor.fetchone()[0]
        memory_import_tree(tree=read_tree(tree), actor=Actor.system("tests"))
        cursor.execute("PRAGMA cache_size")
        assert cursor.fetchone()[0] == before
    assert Lesson.objects.count() == 5


def test_lines_differing_only_in_spacing_are_the_same_lesson(tmp_path):
    from memory.models import content_hash

    # Runs of any whitespace (tabs, no-break and ideographic spaces, line separators) count as one space.
    assert content_hash("Retry\t uses\u00a0a  fixed\u3000delay\u2028 ") == content_hash("retry uses a fixed delay.")
    root = write_tree(
        tmp_path / "agents",
        {
            "Maya/memories/app/working.md": "## 2025-01-31 [OBSERVATION]\n- [OBSERVATION] Retry  uses a\u00a0fixed delay\n",
        },
    )
    memory_import_tree(tree=read_tree(root), actor=Actor.system("tests"))
    (root / "Maya/memories/app/working.md").write_text(
        "## 2025-01-31 [OBSERVATION]\n- [OBSERVATION] Retry uses a fixed delay.\n", encoding="utf-8"
    )
    report = memory_import_tree(tree=read_tree(root), actor=Actor.system("tests"))
    assert report.added == 0 and report.already_present == 1


TRICKY = [
    "Quotes \"double\" and 'single', a backslash \\ and C:\\temp\\new",
    "</script><b>markup</b> & entities &amp; stay text",
    "Emoji 🚀 outside the basic plane, combining e\u0301, Arabic مرحبا and 日本語",
    'Braces {"k": [1, 2]} and a JSON-looking tail ]}',
]


def test_history_of_an_import_is_the_snapshot_of_each_stored_lesson(tmp_path):
    from memory.services import lesson_snapshot

    working = (
        "## 2025-03-01 [OBSERVATION]\n"
        + "".join(
            f"- [OBSERVATION] {text} (ref: src/a{i}.py#L{i + 1}-L{i + 9}, lib/b.ts)\n" for i, text in enumerate(TRICKY)
        )
        + "- not a bullet at all\n- [TODO] plain, no refs\n"
    )
    core = (
        "".join(f"- [PATTERN] core {text} (promoted 2025-02-0{i + 1})\n" for i, text in enumerate(TRICKY))
        + "- [DECISION] undated core line\n"
    )
    root = write_tree(
        tmp_path / "agents",
        {
            "Maya/memories/app/working.md": working,
            "Maya/memories/app/core.md": core,
            "Omar/memories/app/working.md": working,
        },
    )
    report = memory_import_tree(tree=read_tree(root), actor=Actor.system("tests"))
    assert report.added == Lesson.objects.count() == 2 * (len(TRICKY) + 2) + len(TRICKY) + 1
    for lesson in Lesson.objects.prefetch_related("refs"):
        change = Change.objects.get(lesson=lesson)
        assert change.action == Change.Action.CREATE and change.memory_id == lesson.memory_id
        assert change.after == lesson_snapshot(lesson), lesson.text
    stored = {lesson.text for lesson in Lesson.objects.all()}
    assert set(TRICKY) <= stored and {f"core {t}" for t in TRICKY} <= stored


def test_lessons_refs_and_history_line_up_across_write_chunks(tmp_path, monkeypatch):
    from memory.formats import importer

    monkeypatch.setattr(importer._Writer, "MAX_LINES", 7)  # several writes, some splitting no folder
    files = {}
    for p in range(3):
        for q in range(4):
            files[f"Persona {p}/memories/project-{q}/working.md"] = "## 2025-01-02 [TODO]\n" + "".join(
                f"- [TODO] p{p} q{q} n{n} (ref: src/p{p}q{q}n{n}.py#L{n + 1})\n" for n in range(q + 2)
            )
    root = write_tree(tmp_path / "agents", files)
    report = memory_import_tree(tree=read_tree(root), actor=Actor.system("tests"))
    assert report.added == Lesson.objects.count() == 3 * (2 + 3 + 4 + 5)
    for lesson in Lesson.objects.select_related("memory__persona", "memory__project").prefetch_related("refs"):
        p, q, n = (part[1:] for part in lesson.text.split())
        assert (lesson.memory.persona.name, lesson.memory.project.slug) == (f"Persona {p}", f"project-{q}")
        assert [r.as_text() for r in lesson.refs.all()] == [f"src/p{p}q{q}n{n}.py#L{int(n) + 1}"]
        assert Change.objects.get(lesson=lesson).after["text"] == lesson.text
    assert ChangeBatch.objects.count() == 12
    assert all(m.batch_id and m.memory_version == 1 for m in report.memories)


def test_two_folders_of_one_memory_add_their_shared_lines_once(tmp_path):
    shared = "- [TODO] Rotate the signing key\n"
    root = write_tree(
        tmp_path / "agents",
        {
            "Maya/memories/app/working.md": "## 2025-01-02 [TODO]\n" + shared,
            "maya/memories/app/working.md": "## 2025-01-02 [TODO]\n" + shared + "- [TODO] Only in the second folder\n",
        },
    )
    report = memory_import_tree(tree=read_tree(root), actor=Actor.system("tests"))
    assert Memory.objects.count() == 1 and Persona.objects.count() == 1
    assert sorted(Lesson.objects.values_list("text", flat=True)) == [
        "Only in the second folder",
        "Rotate the signing key",
    ]
    assert [(m.added, m.already_present) for m in report.memories] == [(1, 0), (1, 1)]
    assert [m.created for m in report.memories] == [["persona", "project", "memory"], []]
    first, second = Lesson.objects.order_by("id")
    assert second.section > first.section  # a later import section, not merged into the first


def test_an_import_leaves_the_garbage_collector_as_it_found_it(tree):
    """Imports pause the cyclic collector while they run; a failed one resumes it too."""
    assert gc.isenabled()
    memory_import_tree(tree=read_tree(tree), actor=Actor.system("test"))
    assert gc.isenabled()
    (tree / "Maya" / "memories" / "night-watch-cli" / "core.md").write_text("- [PATTERN] x\n", encoding="utf-8")
    broken = read_tree(tree)
    broken.memories[0].persona_name = "/"  # not a name a persona can have: the import refuses it
    with pytest.raises(nightwatch.TreeError):
        memory_import_tree(tree=broken, actor=Actor.system("test"))
    assert gc.isenabled()
    gc.disable()
    try:
        memory_import_tree(tree=read_tree(tree), actor=Actor.system("test"))
        assert not gc.isenabled(), "a collector paused before the import stays paused"
    finally:
        gc.enable()
