"""Each memory keeps its active lessons per tier (Memory.active_core_lessons / active_working_lessons),
counted again by every write that bumps its version, so list pages never count lessons. After each
kind of write the kept numbers equal a real count."""

import pytest

from memory import services
from memory.bench.files import generate_tree
from memory.formats.importer import memory_import_tree
from memory.formats.nightwatch import read_tree
from memory.models import Lesson, LessonStatus, Memory
from tests.factories import SYSTEM, MemoryFactory, make_lesson

pytestmark = pytest.mark.django_db


def _kept(memory):
    memory.refresh_from_db()
    return memory.active_core_lessons, memory.active_working_lessons


def _counted(memory):
    active = Lesson.objects.filter(memory=memory, status=LessonStatus.ACTIVE)
    return active.filter(tier="core").count(), active.filter(tier="working").count()


def test_every_kind_of_write_keeps_the_counts(memory):
    assert _kept(memory) == (0, 0)
    first = make_lesson(memory, "Retry webhooks with backoff")
    second = make_lesson(memory, "Never log tokens", category="PATTERN", tier="core")
    third = make_lesson(memory, "Cache the compiled memory per version")
    assert _kept(memory) == _counted(memory) == (1, 2)

    services.lesson_promote(lesson=first, actor=SYSTEM)  # it lives on in a core lesson: no longer active
    assert _kept(memory) == _counted(memory) == (1, 1)
    services.lesson_delete(lesson=third, actor=SYSTEM)
    assert _kept(memory) == _counted(memory) == (1, 0)
    services.lesson_restore(lesson=Lesson.objects.get(pk=third.pk), actor=SYSTEM)
    assert _kept(memory) == _counted(memory) == (1, 1)
    services.lesson_update(lesson=Lesson.objects.get(pk=second.pk), actor=SYSTEM, text="Never log tokens or keys")
    assert _kept(memory) == _counted(memory) == (1, 1)

    # Reverting the promotion's batch puts the counts back with the lesson.
    promote_batch = services.ChangeBatch.objects.filter(memory=memory, changes__lesson=first).order_by("id")[1]
    services.batch_revert(batch=promote_batch, actor=SYSTEM)
    assert _kept(memory) == _counted(memory) == (1, 2)

    drafts = [
        services.LessonDraft(text="Pin the database image", category="DECISION"),
        services.LessonDraft(text="Retry webhooks with backoff", category="OBSERVATION"),
    ]
    services.lessons_append_or_confirm(
        memory=memory, drafts=drafts, actor=SYSTEM, kind="api", label="append", reason=""
    )
    assert _kept(memory) == _counted(memory)


def test_an_import_counts_every_memory_it_wrote(tmp_path):
    generate_tree(tmp_path, personas=2, projects=3, core_per_memory=4, working_per_memory=11, persona="Counted")
    memory_import_tree(tree=read_tree(tmp_path), actor=SYSTEM)
    memories = list(Memory.objects.filter(persona__name__startswith="Counted"))
    assert len(memories) == 6
    for memory in memories:
        assert _kept(memory) == _counted(memory) == (4, 11)


def test_other_memories_keep_their_counts(memory):
    other = MemoryFactory()
    make_lesson(other, "Only in the other memory")
    make_lesson(memory, "Only in this memory")
    make_lesson(memory, "Also in this memory")
    assert _kept(other) == (0, 1) and _kept(memory) == (0, 2)


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_writers_at_the_same_time_leave_the_right_counts(memory):
    """Six writers adding and deleting lessons of one memory at once, each on its own connection: the
    recount runs after the version bump took the row lock, so the last one sees every other's lessons."""
    import threading

    from django.db import connections

    from tests.conftest import race_needs_postgres

    race_needs_postgres()
    doomed = [make_lesson(memory, f"Soon deleted lesson {k}") for k in range(3)]
    barrier, errors = threading.Barrier(6), []

    def write(k):
        try:
            barrier.wait(timeout=10)
            for n in range(4):
                make_lesson(
                    memory,
                    f"Writer {k} lesson {n}",
                    tier="core" if n % 2 else "working",
                    category="PATTERN" if n % 2 else "OBSERVATION",
                )
            if k < 3:
                services.lesson_delete(lesson=doomed[k], actor=SYSTEM)
        except Exception as exc:  # surfaced below
            errors.append(repr(exc))
        finally:
            connections.close_all()

    threads = [threading.Thread(target=write, args=(k,)) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors
    assert _kept(memory) == _counted(memory) == (12, 12)
