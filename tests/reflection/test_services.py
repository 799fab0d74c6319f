"""interaction_reflect: lessons with provenance, duplicates confirmed, failures store nothing."""

import pytest

from memory.engines.base import EngineError
from memory.models import Change, ChangeBatch, Interaction, Lesson, LessonConfirmation
from memory.reflection.services import interaction_create, interaction_reflect
from memory.services import Actor, batch_revert
from memory.signals import working_lessons_added
from tests.factories import make_lesson

ANSWER = (
    "- [PATTERN] Session refresh in auth/session.py never checks expiry (ref: auth/session.py#L20-L48)\n"
    "- [TODO] Add an expiry test to test_session.py (ref: auth/tests/test_session.py)\n"
    "- [OBSERVATION] Security should be reviewed\n"
)


@pytest.fixture
def signals():
    seen = []
    working_lessons_added.connect(lambda sender, **kw: seen.append(kw), weak=False, dispatch_uid="t-reflect")
    yield seen
    working_lessons_added.disconnect(dispatch_uid="t-reflect")


def _reflect(interaction, capture):
    with capture(execute=True):
        return interaction_reflect(interaction_id=interaction.pk)


def test_llm_answer_becomes_working_lessons(scripted, interaction, memory, signals, django_capture_on_commit_callbacks):
    engine = scripted(ANSWER)
    version = memory.version
    ids = _reflect(interaction, django_capture_on_commit_callbacks)
    lessons = list(Lesson.objects.order_by("id"))
    assert ids == [lesson.pk for lesson in lessons]
    assert [(lesson.tier, lesson.category, lesson.vague) for lesson in lessons] == [
        ("working", "PATTERN", False),
        ("working", "TODO", False),
        ("working", "OBSERVATION", True),
    ]
    assert all(lesson.interaction == interaction for lesson in lessons)
    assert len({lesson.section for lesson in lessons}) == 1
    assert [r.as_text() for r in lessons[0].refs.all()] == ["auth/session.py#L20-L48"]
    batch = ChangeBatch.objects.get()
    assert batch.kind == "reflection" and batch.actor_type == "job" and batch.changes.count() == 3
    interaction.refresh_from_db()
    memory.refresh_from_db()
    assert interaction.status == "reflected" and interaction.reflected_at and interaction.error == ""
    assert memory.last_reflected_at is not None and memory.version == version + 1
    assert signals == [{"signal": working_lessons_added, "memory_id": memory.pk, "lesson_ids": ids}]
    call = engine.calls[0]
    assert call["purpose"] == "reflection" and "Trigger: pr_review" in call["prompt"]
    assert call["system"].startswith(f"You are {memory.persona.name}")


def test_reflection_batch_reverts_as_one_unit(scripted, interaction, memory, django_capture_on_commit_callbacks):
    scripted(ANSWER)
    _reflect(interaction, django_capture_on_commit_callbacks)
    batch_revert(batch=ChangeBatch.objects.get(kind="reflection"), actor=Actor.system("tests"))
    assert not Lesson.objects.active().exists()


def test_exact_duplicates_confirm_existing_lessons(
    scripted, interaction, memory, signals, django_capture_on_commit_callbacks
):
    working = make_lesson(memory, "Session refresh in auth/session.py never checks expiry")
    core = make_lesson(memory, "Add an expiry test to test_session.py.", category="PATTERN", tier="core")
    scripted(ANSWER + "- [OBSERVATION] security SHOULD be reviewed\n")
    ids = _reflect(interaction, django_capture_on_commit_callbacks)
    assert len(ids) == 1 and Lesson.objects.get(pk=ids[0]).text == "Security should be reviewed"
    confirmations = LessonConfirmation.objects.order_by("id")
    assert [(c.lesson, c.interaction) for c in confirmations] == [(working, interaction), (core, interaction)]
    assert Lesson.objects.count() == 3
    assert signals[0]["lesson_ids"] == ids


def test_all_duplicates_add_nothing_and_send_nothing(
    scripted, interaction, memory, signals, django_capture_on_commit_callbacks
):
    make_lesson(memory, "Views are thin in api/views.py")
    version = memory.version
    scripted("- [PATTERN] Views are thin in api/views.py")
    assert _reflect(interaction, django_capture_on_commit_callbacks) == []
    memory.refresh_from_db()
    interaction.refresh_from_db()
    assert memory.version == version and signals == [] and interaction.status == "reflected"
    assert not ChangeBatch.objects.filter(kind="reflection").exists()
    assert LessonConfirmation.objects.count() == 1


def test_a_deleted_lesson_is_not_a_duplicate(scripted, interaction, memory, django_capture_on_commit_callbacks):
    old = make_lesson(memory, "Views are thin in api/views.py")
    from memory.services import lesson_delete

    lesson_delete(lesson=old, actor=Actor.system("tests"))
    scripted("- [PATTERN] Views are thin in api/views.py")
    assert len(_reflect(interaction, django_capture_on_commit_callbacks)) == 1


@pytest.mark.parametrize(
    "answer, error",
    [
        ("Nothing to report.", "no bullets"),
        ("\n".join(f"- [TODO] item {i} in a.py" for i in range(6)), "6 bullets"),
        ("- [PATTERN] fine in a.py\n- [RUMOUR] the build is cursed", "unknown category"),
    ],
)
def test_malformed_answer_stores_nothing_and_records_the_failure(
    scripted, interaction, memory, signals, answer, error, django_capture_on_commit_callbacks
):
    scripted(answer)
    version = memory.version
    assert _reflect(interaction, django_capture_on_commit_callbacks) == []
    interaction.refresh_from_db()
    memory.refresh_from_db()
    assert interaction.status == "failed" and error in interaction.error
    assert not Lesson.objects.exists() and not Change.objects.exists() and not ChangeBatch.objects.exists()
    assert memory.version == version and memory.last_reflected_at is None and signals == []


def test_engine_error_is_recorded(scripted, interaction):
    scripted(error=EngineError("anthropic: 529 overloaded after 3 attempts"))
    interaction_reflect(interaction_id=interaction.pk)
    interaction.refresh_from_db()
    assert interaction.status == "failed" and "529 overloaded" in interaction.error
    assert not Lesson.objects.exists()


def test_reflection_runs_once(scripted, interaction, django_capture_on_commit_callbacks):
    engine = scripted(ANSWER)
    _reflect(interaction, django_capture_on_commit_callbacks)
    assert _reflect(interaction, django_capture_on_commit_callbacks) == []
    assert len(engine.calls) == 1 and Lesson.objects.count() == 3


def test_offline_engine_records_the_summary_as_one_observation(
    interaction, memory, signals, django_capture_on_commit_callbacks
):
    ids = _reflect(interaction, django_capture_on_commit_callbacks)
    lesson = Lesson.objects.get()
    assert ids == [lesson.pk]
    assert lesson.category == "OBSERVATION" and lesson.tier == "working" and lesson.interaction == interaction
    assert lesson.text == interaction.summary
    assert [r.as_text() for r in lesson.refs.all()] == ["auth/session.py#L20-L48", "auth/tests/test_session.py"]
    assert signals[0]["lesson_ids"] == ids


def test_offline_keeps_long_multiline_summaries_to_one_line(memory, django_capture_on_commit_callbacks):
    interaction = Interaction.objects.create(
        memory=memory,
        trigger_type="deliberation",
        summary="First line\n\nsecond line " + "y" * 3000,
        files_changed=["not a path with spaces"],
    )
    _reflect(interaction, django_capture_on_commit_callbacks)
    lesson = Lesson.objects.get()
    assert "\n" not in lesson.text and len(lesson.text) <= 2000 and lesson.text.startswith("First line second line")
    assert lesson.refs.count() == 0


def test_interaction_create_enqueues_after_commit(memory, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        interaction = interaction_create(memory=memory, trigger_type="proactive", summary="Saw flaky test_sync.py")
    assert len(callbacks) == 1 and Interaction.objects.get().status == "pending"
    callbacks[0]()
    interaction.refresh_from_db()
    assert interaction.status == "reflected" and Lesson.objects.count() == 1


def test_unexpected_error_in_the_task_marks_the_interaction_failed(monkeypatch, interaction):
    from memory.reflection.tasks import reflect_interaction

    def broken(persona, memory=None):
        raise RuntimeError("socket closed")

    monkeypatch.setattr("memory.reflection.services.get_engine", broken)
    # Logged, not raised: in-process it runs after the agent's request committed, and must not turn it into a 500.
    assert reflect_interaction(interaction.pk) == []
    interaction.refresh_from_db()
    assert interaction.status == "failed" and "socket closed" in interaction.error
