"""Work waiting for review says how long it has waited; what waits too long is marked on the home page."""

import re

import pytest

from memory.access import EVERY_MEMORY
from memory.review_queue import overdue, waiting_items
from tests.digest.helpers import waiting_work

pytestmark = pytest.mark.django_db


def test_items_older_than_the_setting_are_counted_as_overdue(memory, settings):
    _candidate, _proposal, _run = waiting_work(memory, compaction_days_ago=10, run_days_ago=2)
    late = overdue(EVERY_MEMORY)
    assert late.days == 7 and late.total == 1 and late.summary == "1 compaction"
    settings.REVIEW_OVERDUE_DAYS = 1
    assert overdue(EVERY_MEMORY).summary == "1 compaction, 1 pipeline run to look at"
    assert overdue([memory.pk + 1000]).total == 0


def test_waiting_items_come_oldest_first_with_their_links(memory):
    candidate, proposal, run = waiting_work(memory)
    items = waiting_items(EVERY_MEMORY)
    assert [item.url for item in items] == [
        f"/compactions/{proposal.pk}/",
        f"/pipeline/runs/{run.pk}/",
        f"/promotions/{candidate.pk}/",
    ]
    assert items[0].memory == f"{memory.persona.name} × {memory.project.name}"


def test_home_marks_what_waited_too_long(client_for, viewer, memory):
    waiting_work(memory, compaction_days_ago=10)
    html = client_for(viewer).get("/").content.decode()
    assert re.search(
        r'class="review-overdue" data-overdue="1"><strong>1 waiting more than 7 days</strong>: 1 compaction', html
    )


def test_home_has_no_mark_when_nothing_is_old(client_for, viewer, memory):
    waiting_work(memory, compaction_days_ago=1)
    assert "review-overdue" not in client_for(viewer).get("/").content.decode()


def test_compaction_pages_say_how_long_a_proposal_waited(client_for, viewer, memory):
    _, proposal, _ = waiting_work(memory, compaction_days_ago=10)
    client = client_for(viewer)
    listing = client.get("/compactions/").content.decode()
    assert re.search(r'class="waited waited-overdue"[^>]*>waiting 1\xa0week', listing)
    detail = client.get(f"/compactions/{proposal.pk}/").content.decode()
    assert re.search(r'class="waited waited-overdue"[^>]*>waiting for review 1\xa0week', detail)


def test_runs_to_look_at_say_how_long_they_waited(client_for, approver, memory):
    _, _, run = waiting_work(memory, run_days_ago=2)
    client = client_for(approver)
    assert re.search(r'class="waited">waiting for a look 2\xa0days', client.get("/pipeline/").content.decode())
    assert re.search(
        r'class="waited">waiting for a look 2\xa0days', client.get(f"/pipeline/runs/{run.pk}/").content.decode()
    )
