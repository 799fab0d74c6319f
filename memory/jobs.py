"""How services queue background work: one helper, after the commit, by the task's name.

A service never imports a tasks module (tasks import services, to call them), so naming the task
keeps the two free of import cycles. Task names read `memory.<slice>.<verb>`; each takes ids and
calls one service. The task runs only once the transaction that asked for it has committed, so it
sees what was written (and nothing, when the transaction rolls back). With no broker configured
(CELERY_TASK_ALWAYS_EAGER) it runs in-process at that point.
"""

import sys

from celery import current_app
from django.db import transaction


def enqueue_on_commit(task_name, *args, robust=False, **kwargs):
    """Queue the task `task_name` with these arguments once the current transaction commits.

    robust=True: a failure to queue is logged instead of raised (for follow-up work whose absence
    the next sweep makes up for). The callback is named after the function that queued it, so a
    list of pending on-commit callbacks (a log, a test) says who queued what.
    """

    def send():
        current_app.tasks[task_name].delay(*args, **kwargs)

    send.__qualname__ = f"{sys._getframe(1).f_code.co_name}.<locals>.enqueue[{task_name}]"
    transaction.on_commit(send, robust=robust)
