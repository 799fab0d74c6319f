import pytest
from django.conf import settings
from django.utils import timezone

from memory.models import ChangeBatch, RefinementRun
from memory.refinement.scheduling import nightly_memories, refinement_schedule_nightly
from memory.refinement.services import refinement_run_create, refinement_sweep
from memory.services import Actor, batch_create, lesson_delete
from tests.factories import MemoryFactory, PersonaFactory

from .helpers import core, run_with, state
from .scripted import ScriptedEngine

pytestmark = pytest.mark.django_db


def test_sweeper_fails_only_stale_runs(memory):
    core(memory, "one")
    other = MemoryFactory()
    stale = refinement_run_create(memory=memory)
    fresh = refinement_run_create(memory=other)
    RefinementRun.objects.filter(pk=stale.pk).update(heartbeat_at=timezone.now() - timezone.timedelta(seconds=700))
    assert refinement_sweep() == 1  # default timeout from settings
    stale.refresh_from_db(), fresh.refresh_from_db()
    assert stale.status == "failed" and "stopped responding" in stale.error
    assert fresh.status == "running"
    assert settings.REFINEMENT_HEARTBEAT_TIMEOUT == 600


def test_sweeper_reverts_a_batch_left_by_a_running_run(memory):
    lesson = core(memory, "kept")
    before = state(memory)
    run = refinement_run_create(memory=memory)
    actor = Actor.job("refinement")
    batch = batch_create(memory=memory, kind=ChangeBatch.Kind.REFINEMENT, actor=actor)
    lesson_delete(lesson=lesson, actor=actor, batch=batch)
    RefinementRun.objects.filter(pk=run.pk).update(batch=batch)
    assert refinement_sweep(timeout=0, now=timezone.now() + timezone.timedelta(seconds=1)) == 1
    assert state(memory) == before
    lesson.refresh_from_db()
    assert lesson.status == "active"
    batch.refresh_from_db()
    assert batch.reverted_by_id


def test_a_run_swept_while_its_worker_is_alive_applies_nothing(memory):
    lessons = [core(memory, f"Lesson {i} on cache warmup {i}") for i in range(30)]
    before = state(memory)

    def sweep_midway(call, result):
        refinement_sweep(timeout=0, now=timezone.now() + timezone.timedelta(seconds=1))

    engine = ScriptedEngine(
        [("delete", {"id": lessons[0].pk}), ("delete", {"id": lessons[1].pk}), ("complete", {})],
        after_call=sweep_midway,
    )
    run = run_with(memory, engine)
    assert run.status == "failed"
    assert engine.results[1][1].is_error
    assert state(memory) == before


def test_nightly_skips_archived_inactive_and_empty(django_capture_on_commit_callbacks):
    live = MemoryFactory()
    core(live, "a core lesson")
    archived = MemoryFactory(persona=PersonaFactory(archived_at=timezone.now()))
    core(archived, "a core lesson")
    inactive = MemoryFactory(persona=PersonaFactory(is_active=False))
    core(inactive, "a core lesson")
    MemoryFactory()  # no core lessons
    assert list(nightly_memories()) == [live]
    with django_capture_on_commit_callbacks(execute=True):
        started = refinement_schedule_nightly()
    assert len(started) == 1
    run = RefinementRun.objects.get()
    assert run.memory == live and run.trigger == "nightly" and run.status == "completed"


def test_beat_schedule_has_nightly_and_sweeper():
    tasks = {entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()}
    assert {"memory.refinement.nightly", "memory.refinement.sweep"} <= tasks
    from nightwatch.celery import app

    assert "memory.refinement.nightly" in app.tasks and "memory.refinement.sweep" in app.tasks
