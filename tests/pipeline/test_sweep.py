"""A run whose worker died stops blocking the memory: the sweeper marks it failed."""

from datetime import timedelta

import pytest
from django.utils import timezone

from memory.models import PipelineRun
from memory.pipeline.services import PipelineError, pipeline_start, pipeline_sweep
from memory.pipeline.tasks import pipeline_sweep_task
from tests.factories import SYSTEM

pytestmark = pytest.mark.django_db


def _running(memory, seconds_ago):
    return PipelineRun.objects.create(
        memory=memory,
        status=PipelineRun.Status.RUNNING,
        heartbeat_at=timezone.now() - timedelta(seconds=seconds_ago),
    )


def test_a_live_run_blocks_a_second_one(memory, settings):
    settings.PIPELINE_HEARTBEAT_TIMEOUT = 600
    _running(memory, seconds_ago=5)
    with pytest.raises(PipelineError, match="already in progress"):
        pipeline_start(memory=memory, actor=SYSTEM, transcript_text="User: the deploy script skips migrations")
    assert pipeline_sweep() == 0


def test_a_run_without_progress_is_marked_failed_and_no_longer_blocks(memory, settings):
    settings.PIPELINE_HEARTBEAT_TIMEOUT = 600
    dead = _running(memory, seconds_ago=3600)
    run = pipeline_start(memory=memory, actor=SYSTEM, transcript_text="User: the deploy script skips migrations")
    dead.refresh_from_db()
    assert dead.status == "failed" and "No progress for 600 s" in dead.error
    assert run.pk != dead.pk


def test_the_scheduled_sweep_covers_every_memory(memory, settings):
    settings.PIPELINE_HEARTBEAT_TIMEOUT = 60
    _running(memory, seconds_ago=120)
    _running(memory, seconds_ago=1)
    assert pipeline_sweep_task.delay().get() == 1
    assert "pipeline-sweeper" in settings.CELERY_BEAT_SCHEDULE
