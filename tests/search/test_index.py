"""The index follows every write of memory_lesson, whichever path writes it; the rebuild command refills it."""

from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection
from django.utils import timezone

from memory import services
from memory.models import ChangeBatch, Lesson
from memory.search.selectors import ranked_for_memory
from tests.factories import make_lesson

pytestmark = pytest.mark.django_db

SYSTEM = services.Actor.system("tests")


def found(memory, words):
    return list(ranked_for_memory(Lesson.objects.filter(memory=memory), words).values_list("pk", flat=True))


def test_create_update_delete_and_revert(memory):
    lesson = make_lesson(memory, "Refunds retry with backoff")
    assert found(memory, "refund") == [lesson.pk]
    services.lesson_update(lesson=lesson, actor=SYSTEM, text="Invoices round per line")
    assert found(memory, "refund") == [] and found(memory, "invoice") == [lesson.pk]
    batch = lesson.changes.order_by("-pk").first().batch
    services.batch_revert(batch=batch, actor=SYSTEM)
    assert found(memory, "refund") == [lesson.pk] and found(memory, "invoice") == []
    Lesson.objects.filter(pk=lesson.pk).delete()
    assert found(memory, "refund") == []


def test_bulk_create_is_indexed(memory):
    batch = services.batch_create(memory=memory, kind=ChangeBatch.Kind.IMPORT, actor=SYSTEM)
    rows = [
        services.NewLesson(
            batch.pk, memory.pk, "working", "OBSERVATION", f"Bulk lesson {i} über Datenbanken", timezone.localdate(), i
        )
        for i in range(30)
    ]
    ids = services.lessons_bulk_create(rows)
    assert sorted(found(memory, "Datenbank")) == sorted(ids)


def test_rebuild_command_refills_the_index(memory):
    lesson = make_lesson(memory, "Caches are invalidated after price changes")
    out = StringIO()
    call_command("rebuild_search_index", stdout=out)
    assert "search index rebuilt" in out.getvalue()
    assert found(memory, "invalidate caches") == [lesson.pk]
    if connection.vendor == "sqlite":
        # Triggers lost (as a table rebuild loses them): the rebuild puts them back.
        with connection.cursor() as cursor:
            cursor.execute("DROP TRIGGER memory_lesson_search_ai")
        call_command("rebuild_search_index", stdout=out)
        second = make_lesson(memory, "Caches warm up at start")
        assert second.pk in found(memory, "caches")


def test_the_ref_prefix_indexes_and_the_query_function_exist():
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("SELECT name FROM sqlite_master WHERE type = 'index' AND name LIKE 'lesson_%'")
            assert {"lesson_ref_path_prefix", "lesson_search_cover"} <= {row[0] for row in cursor.fetchall()}
            return
        cursor.execute("SELECT indexname FROM pg_indexes WHERE indexname LIKE 'lesson_%'")
        assert {"lesson_ref_path_prefix", "lesson_search_cover"} <= {row[0] for row in cursor.fetchall()}
        # Readings alike are or-ed once; none left gives no query (NULL matches nothing).
        cursor.execute(
            "SELECT nw_tsquery_any(websearch_to_tsquery('simple', 'refund'), websearch_to_tsquery('english', "
            "'refund'), websearch_to_tsquery('german', 'refund'))::text, nw_tsquery_any(websearch_to_tsquery("
            "'english', 'the'))"
        )
        assert cursor.fetchone() == ("'refund'", None)
        cursor.execute("SHOW jit")
        assert cursor.fetchone()[0] == "off"
