"""Celery tasks of this feature: thin, take ids, call one service."""

import logging

from celery import shared_task

from memory.pipeline.services import pipeline_run_execute, pipeline_sweep

__all__ = ["pipeline_run_task", "pipeline_sweep_task"]

log = logging.getLogger(__name__)


@shared_task(name="memory.pipeline.run")
def pipeline_run_task(run_id):
    try:
        return pipeline_run_execute(run_id=run_id).status
    except Exception:
        # The run row already says it failed; the page shows that instead of an error page.
        log.exception("pipeline run %s failed", run_id)
        return "failed"


@shared_task(name="memory.pipeline.sweep")
def pipeline_sweep_task():
    return pipeline_sweep()
