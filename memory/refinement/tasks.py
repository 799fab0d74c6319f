"""Celery tasks of this feature: thin, take ids, call one service."""

from celery import shared_task

from memory.refinement.scheduling import refinement_schedule_nightly
from memory.refinement.services import refinement_run_execute, refinement_sweep

__all__ = ["refinement_nightly_task", "refinement_run_task", "refinement_sweep_task"]


@shared_task(name="memory.refinement.run")
def refinement_run_task(run_id):
    return refinement_run_execute(run_id=run_id).status


@shared_task(name="memory.refinement.sweep")
def refinement_sweep_task():
    return refinement_sweep()


@shared_task(name="memory.refinement.nightly")
def refinement_nightly_task():
    return refinement_schedule_nightly()
