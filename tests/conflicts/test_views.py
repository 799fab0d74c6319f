"""The conflict review pages: the list, one conflict side by side (escaped), and the decision."""

from datetime import date

import pytest
from django.urls import reverse

from memory.conflicts.services import conflicts_detect
from memory.models import LessonConflict, LessonStatus
from memory.review_queue import counts_by_source
from tests.factories import make_lesson


@pytest.fixture
def conflict(memory):
    make_lesson(memory, "Build with <b>webpack</b> for the admin bundle.", day=date(2026, 1, 1))
    make_lesson(memory, "Build with <b>vite</b> for the admin bundle.", day=date(2026, 2, 1))
    conflicts_detect(memory=memory)
    return LessonConflict.objects.get()


def test_list_and_detail_show_both_lessons_escaped(conflict, viewer, client_for):
    client = client_for(viewer)
    listing = client.get(reverse("conflicts:inbox")).content.decode()
    assert f"Conflict #{conflict.pk}" in listing and "&lt;b&gt;vite&lt;/b&gt;" in listing
    page = client.get(reverse("conflicts:detail", args=[conflict.pk])).content.decode()
    assert "&lt;b&gt;webpack&lt;/b&gt;" in page and "&lt;b&gt;vite&lt;/b&gt;" in page and "<b>vite" not in page
    assert "Keep the newer" not in page  # a viewer reads, never decides


def test_an_approver_keeps_the_newer(conflict, approver, client_for):
    client = client_for(approver)
    assert "Keep the newer" in client.get(reverse("conflicts:detail", args=[conflict.pk])).content.decode()
    response = client.post(reverse("conflicts:decide", args=[conflict.pk]), {"decision": "keep_newer"})
    assert response.status_code == 302
    conflict.refresh_from_db()
    conflict.older.refresh_from_db()
    assert conflict.status == "resolved" and conflict.older.status == LessonStatus.SUPERSEDED


def test_pending_conflicts_count_in_the_review_queue(conflict, memory):
    from memory.access import EVERY_MEMORY

    assert counts_by_source(EVERY_MEMORY)["conflicts"].get(memory.pk) == 1


def test_the_list_costs_the_same_queries_however_many_conflicts(
    memory, viewer, client_for, django_assert_max_num_queries
):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    def add(n, start):
        for i in range(start, start + n):
            make_lesson(memory, f"Queue {i} workers run with celery.", day=date(2026, 1, 1))
            make_lesson(memory, f"Queue {i} workers run with dramatiq.", day=date(2026, 2, 1))

    client = client_for(viewer)
    add(2, 0)
    conflicts_detect(memory=memory)
    with CaptureQueriesContext(connection) as few:
        client.get(reverse("conflicts:inbox"))
    add(8, 2)
    conflicts_detect(memory=memory)
    assert LessonConflict.objects.count() == 10
    with django_assert_max_num_queries(len(few)):
        page = client.get(reverse("conflicts:inbox")).content.decode()
    assert page.count("workers run with dramatiq.") == 10


def test_bulk_keep_both_dismisses_each_selected_conflict(memory, approver, client_for):
    for tool in ("celery", "rq"):
        make_lesson(memory, f"Mail jobs are queued with {tool}.", day=date(2026, 1, 1) if tool == "celery" else None)
    make_lesson(memory, "Reports are rendered with webpack.", day=date(2026, 1, 1))
    make_lesson(memory, "Reports are rendered with vite.", day=date(2026, 2, 1))
    conflicts_detect(memory=memory)
    ids = list(LessonConflict.objects.values_list("pk", flat=True))
    assert len(ids) == 2
    client = client_for(approver)
    response = client.post(reverse("conflicts:bulk"), {"conflict": ids, "decision": "keep_both"}, follow=True)
    assert "Decided 2 conflicts." in response.content.decode()
    assert set(LessonConflict.objects.values_list("status", flat=True)) == {"dismissed"}


def test_bulk_refuses_an_empty_selection(memory, approver, client_for):
    response = client_for(approver).post(reverse("conflicts:bulk"), {"decision": "keep_both"}, follow=True)
    assert "Nothing decided: Select at least one conflict." in response.content.decode()
