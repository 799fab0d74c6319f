"""The list of file conflicts waiting for a person; counted by the one review queue on the home page."""

import pytest
from django.urls import reverse

pytestmark = pytest.mark.django_db


def test_lists_waiting_conflicts_in_a_fixed_number_of_queries(client_for, viewer, conflict, django_assert_num_queries):
    client = client_for(viewer)
    # session, user, user permissions, group permissions, the nav's review counts (one UNION), the conflicts
    # with their memories and folders
    with django_assert_num_queries(6):
        response = client.get(reverse("sync-conflicts"))
    assert response.status_code == 200
    assert reverse("sync-conflict", args=[conflict.pk]).encode() in response.content


def test_the_home_page_counts_file_conflicts(client_for, viewer, conflict):
    response = client_for(viewer).get(reverse("home"))
    assert b"1 file conflict" in response.content


def test_the_memory_page_says_when_its_folder_was_synced_and_that_a_conflict_waits(client_for, viewer, conflict):
    response = client_for(viewer).get(conflict.memory.get_absolute_url())
    assert b"Night Watch folder synced" in response.content
    assert b"1 file conflict waiting" in response.content


def test_a_conflict_waiting_past_the_overdue_mark_is_marked(client_for, viewer, conflict, settings):
    """As the compaction and run lists mark what waited longer than REVIEW_OVERDUE_DAYS."""
    import re
    from datetime import timedelta

    from django.utils import timezone

    client = client_for(viewer)
    assert re.search(r'class="waited">waiting \d+', client.get(reverse("sync-conflicts")).content.decode())
    settings.REVIEW_OVERDUE_DAYS = 2
    type(conflict).objects.filter(pk=conflict.pk).update(created_at=timezone.now() - timedelta(days=3))
    listing = client.get(reverse("sync-conflicts")).content.decode()
    assert re.search(r'class="waited waited-overdue" title="Waiting longer than 2 days">waiting 3\xa0days', listing)
    detail = client.get(reverse("sync-conflict", args=[conflict.pk])).content.decode()
    assert re.search(r'class="waited waited-overdue"[^>]*>waiting for review 3\xa0days', detail)
