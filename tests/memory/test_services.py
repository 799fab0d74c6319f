from datetime import date

import pytest
from django.core.exceptions import PermissionDenied, ValidationError

from memory import services
from memory.models import Change, ChangeBatch, Lesson
from tests.factories import SYSTEM, make_lesson

pytestmark = pytest.mark.django_db


def state(memory):
    return {
        (
            lesson.pk,
            lesson.text,
            lesson.category,
            lesson.tier,
            lesson.status,
            lesson.protected,
            tuple(r.as_text() for r in lesson.refs.all()),
        )
        for lesson in Lesson.objects.filter(memory=memory).prefetch_related("refs")
    }


def test_create_records_history_and_bumps_version(memory):
    lesson = make_lesson(memory, "Queue worker has no backoff", refs="src/queue/worker.ts#L88-L95")
    memory.refresh_from_db()
    assert memory.version == 1
    change = Change.objects.get(lesson=lesson)
    assert change.action == "create" and change.before is None
    assert change.after["refs"] == ["src/queue/worker.ts#L88-L95"]


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"text": "  "}, "text"),
        ({"text": "x" * 2001}, "text"),
        ({"text": "two\nlines"}, "text"),
        ({"category": "OBSERVATION", "tier": "core"}, "category"),
        ({"category": "NOPE"}, "category"),
        ({"relevance": "urgent"}, "relevance"),
        ({"refs": "src/a.py#L9-L3"}, "refs"),
        ({"refs": "../etc/passwd"}, "refs"),
    ],
)
def test_bad_input_is_a_clear_error_and_changes_nothing(memory, kwargs, field):
    args = {"text": "A valid lesson about src/a.py", "category": "OBSERVATION", "tier": "working", **kwargs}
    with pytest.raises(ValidationError) as exc:
        services.lesson_create(memory=memory, actor=SYSTEM, **args)
    assert field in exc.value.message_dict
    assert not Lesson.objects.exists() and not ChangeBatch.objects.exists()
    memory.refresh_from_db()
    assert memory.version == 0


def test_protected_lesson_cannot_be_deleted(memory):
    lesson = make_lesson(memory, protected=True)
    with pytest.raises(PermissionDenied):
        services.lesson_delete(lesson=lesson, actor=SYSTEM)
    lesson.refresh_from_db()
    assert lesson.status == "active"


def test_revert_one_change_restores_before_state(memory):
    lesson = make_lesson(memory, "Original text about src/a.py", refs="src/a.py#L1")
    before = state(memory)
    services.lesson_update(lesson=lesson, actor=SYSTEM, text="Edited text", refs="src/b.py#L2-L4")
    change = Change.objects.filter(lesson=lesson, action="update").get()
    services.change_revert(change=change, actor=SYSTEM, reason="typo")
    assert state(memory) == before
    with pytest.raises(services.RevertError, match="already reverted"):
        services.change_revert(change=change, actor=SYSTEM)


def test_revert_refused_when_a_later_change_depends_on_it(memory):
    lesson = make_lesson(memory, "Original about src/a.py")
    services.lesson_update(lesson=lesson, actor=SYSTEM, text="First edit")
    first = Change.objects.get(lesson=lesson, action="update")
    services.lesson_update(lesson=lesson, actor=SYSTEM, text="Second edit")
    with pytest.raises(services.RevertError, match="changed again"):
        services.change_revert(change=first, actor=SYSTEM)
    lesson.refresh_from_db()
    assert lesson.text == "Second edit"


def test_batch_revert_undoes_everything_as_one_change(memory):
    keep = make_lesson(memory, "Untouched lesson about src/k.py")
    a = make_lesson(memory, "Lesson A about src/a.py")
    before = state(memory)
    batch = services.batch_create(memory=memory, kind=ChangeBatch.Kind.REFINEMENT, actor=SYSTEM, label="run 1")
    services.lesson_delete(lesson=a, actor=SYSTEM, batch=batch)
    new = services.lesson_create(
        memory=memory, text="Merged about src/a.py", category="PATTERN", tier="core", actor=SYSTEM, batch=batch
    )
    services.lesson_set_protected(lesson=keep, protected=True, actor=SYSTEM, batch=batch)
    revert = services.batch_revert(batch=batch, actor=SYSTEM)
    after = state(memory)
    # The created lesson is kept (nothing is lost) but soft-deleted; everything else is as before.
    assert {s for s in after if s[0] != new.pk} == before
    assert Lesson.objects.get(pk=new.pk).status == "deleted"
    assert revert.changes.count() == 3
    with pytest.raises(services.RevertError, match="already reverted"):
        services.batch_revert(batch=batch, actor=SYSTEM)


def test_unchanged_update_writes_no_history(memory):
    lesson = make_lesson(memory, "Same text about src/a.py")
    services.lesson_update(lesson=lesson, actor=SYSTEM, text="Same text about src/a.py")
    assert Change.objects.filter(lesson=lesson).count() == 1


def test_confirmation_counts_without_duplicating(memory):
    lesson = make_lesson(memory, "Flaky test in tests/api/users.test.ts", day=date(2026, 1, 1))
    services.lesson_confirm(lesson=lesson, confirmed_on=date(2026, 1, 2))
    assert Lesson.objects.count() == 1
    assert lesson.confirmations.count() == 1


def test_supersede_records_history_bumps_version_and_reverts(memory):
    old = make_lesson(memory, "Retry waits 1s in worker.ts", refs="src/queue/worker.ts#L88")
    new = make_lesson(memory, "Retry in worker.ts waits a fixed 1s with no backoff", refs="src/queue/worker.ts#L88")
    memory.refresh_from_db()
    version = memory.version

    lesson = services.lesson_supersede(lesson=old, superseded_by=new, actor=SYSTEM, reason="merged")

    assert (lesson.status, lesson.superseded_by) == ("superseded", new)
    memory.refresh_from_db()
    assert memory.version == version + 1
    change = Change.objects.get(lesson=old, action="supersede")
    assert change.before["status"] == "active" and change.after["status"] == "superseded"
    assert change.batch.reason == "merged"
    assert not Lesson.objects.active().filter(pk=old.pk).exists()

    services.change_revert(change=change, actor=SYSTEM)
    old.refresh_from_db()
    assert old.status == "active"


def test_supersede_joins_the_given_batch(memory):
    a, b, merged = (make_lesson(memory, f"Lesson {i} about api/views.py") for i in range(3))
    batch = services.batch_create(memory=memory, kind="manual", actor=SYSTEM, label="merge")
    for lesson in (a, b):
        services.lesson_supersede(lesson=lesson, superseded_by=merged, actor=SYSTEM, batch=batch)
    assert batch.changes.count() == 2
    services.batch_revert(batch=batch, actor=SYSTEM)
    assert set(Lesson.objects.active().values_list("pk", flat=True)) == {a.pk, b.pk, merged.pk}


@pytest.mark.parametrize("case", ["self", "other_memory", "not_active"])
def test_supersede_refuses_bad_input_and_changes_nothing(memory, case):
    from tests.factories import MemoryFactory

    old = make_lesson(memory, "Old lesson about api/views.py")
    new = make_lesson(memory, "New lesson about api/views.py")
    if case == "self":
        new = old
    elif case == "other_memory":
        new = make_lesson(MemoryFactory(), "Lesson of another memory")
    else:
        services.lesson_delete(lesson=old, actor=SYSTEM)
    before = state(memory)
    with pytest.raises(ValidationError):
        services.lesson_supersede(lesson=old, superseded_by=new, actor=SYSTEM)
    assert state(memory) == before


def test_supersede_without_bump_leaves_the_version_to_the_caller(memory):
    old, new = make_lesson(memory, "Old note on api/views.py"), make_lesson(memory, "New note on api/views.py")
    memory.refresh_from_db()
    version = memory.version
    services.lesson_supersede(lesson=old, superseded_by=new, actor=SYSTEM, bump=False)
    memory.refresh_from_db()
    assert memory.version == version and Change.objects.filter(lesson=old, action="supersede").exists()
