"""The bulk writes of the write path (memory/history/bulk.py): many lessons in a few statements, with the history one by one gives."""

from datetime import date

import pytest
from django.db import connection
from django.utils import timezone

from memory import services
from memory.formats.importer import memory_import_tree
from memory.formats.nightwatch import read_tree
from memory.history.bulk import _CHANGE_COLUMNS
from memory.history.rows import RowInserter
from memory.models import Change, ChangeBatch, Lesson
from memory.refs import Ref
from memory.services import Actor, batch_revert
from tests.factories import MemoryFactory
from tests.formats.conftest import write_tree

pytestmark = pytest.mark.django_db


def _batch(memory):
    return services.batch_create(memory=memory, kind=ChangeBatch.Kind.IMPORT, actor=Actor.system("tests"))


def test_history_of_bulk_lessons_is_the_snapshot_revert_compares(django_assert_max_num_queries):
    memory = MemoryFactory()
    batch = _batch(memory)
    source = services.lesson_create(
        memory=memory, text="Older lesson", category="OBSERVATION", actor=Actor.system("tests")
    )
    new = [
        services.NewLesson(
            batch.pk,
            memory.pk,
            "working",
            "OBSERVATION",
            'Quote " and ünïcode',
            date(2026, 1, 2),
            4,
            refs=[Ref("src/a.py", 3, 9), Ref("README.md")],
        ),
        services.NewLesson(
            batch.pk,
            memory.pk,
            "core",
            "DECISION",
            "Merged lesson",
            date(2026, 1, 3),
            5,
            relevance="critical",
            protected=True,
            derived_from=[source.pk],
        ),
    ]
    with django_assert_max_num_queries(8):  # a few statements whatever the number of lessons
        ids = services.lessons_bulk_create(new)
    lessons = Lesson.objects.filter(pk__in=ids).order_by("id").prefetch_related("refs")
    assert [lesson.text for lesson in lessons] == ['Quote " and ünïcode', "Merged lesson"]
    plain, merged = lessons
    assert [r.as_text() for r in plain.refs.order_by("position")] == ["src/a.py#L3-L9", "README.md"]
    assert (merged.relevance, merged.protected, list(merged.derived_from.all())) == ("critical", True, [source])
    for lesson in lessons:
        change = Change.objects.get(lesson=lesson)
        assert change.action == Change.Action.CREATE and change.batch_id == batch.pk and change.before is None
        assert change.after == services.lesson_snapshot(lesson)
    # The history is right enough to undo: reverting the batch retires both lessons.
    batch_revert(batch=batch, actor=Actor.system("tests"))
    assert set(Lesson.objects.filter(pk__in=ids).values_list("status", flat=True)) == {"deleted"}


def test_imported_lessons_record_the_snapshot_revert_compares(tmp_path):
    root = write_tree(
        tmp_path / "agents", {"Maya/memories/app/working.md": "## 2025-01-02 [TODO]\n- [TODO] check `a.py#L2` first\n"}
    )
    memory_import_tree(tree=read_tree(root), actor=Actor.system("tests"))
    lesson = Lesson.objects.get()
    assert Change.objects.get(lesson=lesson).after == services.lesson_snapshot(lesson)


def test_a_value_too_long_for_its_column_is_refused_not_cut(tmp_path):
    from django.db import DataError, IntegrityError

    if connection.vendor == "sqlite":
        pytest.skip("SQLite does not enforce varchar lengths")
    inserter = RowInserter(Change, _CHANGE_COLUMNS, timezone.now())
    root = write_tree(tmp_path / "agents", {"Maya/memories/app/working.md": "## 2025-01-02 [TODO]\n- [TODO] x\n"})
    memory_import_tree(tree=read_tree(root), actor=Actor.system("tests"))
    change = Change.objects.get()
    with pytest.raises((DataError, IntegrityError)):
        inserter.insert([(change.batch_id, change.memory_id, change.lesson_id, "x" * 50, "{}")])


def test_an_import_drops_the_cached_versions_of_every_memory_it_adds_to(
    tmp_path, settings, django_capture_on_commit_callbacks
):
    from memory import context_cache
    from memory.models import Memory

    settings.MEMORY_VERSION_CACHE_SECONDS = 10  # on whatever versions cache this configuration has

    files = {
        "Maya/memories/app/working.md": "## 2025-01-02 [TODO]\n- [TODO] first\n",
        "Maya/memories/api/working.md": "## 2025-01-02 [TODO]\n- [TODO] first\n",
    }
    root = write_tree(tmp_path / "agents", files)
    memory_import_tree(tree=read_tree(root), actor=Actor.system("tests"))
    memories = list(Memory.objects.select_related("project"))
    for memory in memories:
        context_cache.memory_set(memory.persona_id, memory.project.slug, {"version": "stale"}, memory.project_id)
    assert all(context_cache.memory_get(m.persona_id, m.project.slug) for m in memories)

    root = write_tree(tmp_path / "agents", {path: text + "- [TODO] second\n" for path, text in files.items()})
    with django_capture_on_commit_callbacks(execute=True):
        memory_import_tree(tree=read_tree(root), actor=Actor.system("tests"))
    assert [context_cache.memory_get(m.persona_id, m.project.slug) for m in memories] == [None, None]
