from celery import shared_task

from memory.webhooks.services import webhooks_dispatch, webhooks_record_overdue

__all__ = ["dispatch", "record_overdue"]


@shared_task(name="memory.webhooks.dispatch", ignore_result=True)
def dispatch():
    """Fan out new events and send every delivery that is due (also run by beat, for the retries)."""
    return webhooks_dispatch()


@shared_task(name="memory.webhooks.record_overdue", ignore_result=True)
def record_overdue():
    return webhooks_record_overdue()
