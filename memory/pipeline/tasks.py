"""Celery tasks of this feature: thin, take ids, call one service."""

from celery import shared_task

__all__ = ["pipeline_run_task"]


@shared_task(name="memory.pipeline.run")
def pipeline_run_task(run_id):
    from memory.pipeline.services import pipeline_run_execute

    return pipeline_run_execute(run_id=run_id).status
