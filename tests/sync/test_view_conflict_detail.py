"""One conflict: both texts (escaped), and a curator settles it; viewers only read."""

import pytest
from django.urls import reverse

from memory.models import Lesson
from memory.sync.models import SyncConflict

pytestmark = pytest.mark.django_db


def test_shows_both_texts_escaped(client_for, viewer, conflict, django_assert_num_queries):
    client = client_for(viewer)
    # session, user, the conflict with memory, folder and lesson, the lesson's refs, the nav's review counts,
    # the user's permissions and groups
    with django_assert_num_queries(7):
        response = client.get(reverse("sync-conflict", args=[conflict.pk]))
    body = response.content.decode()
    assert "has &lt;b&gt;no&lt;/b&gt; backoff" in body and "<b>no</b>" not in body
    assert "uses a fixed 2 s delay" in body and "uses a fixed delay" in body
    assert 'name="choice"' not in body  # a viewer cannot settle it


def test_a_curator_keeps_both_texts(client_for, curator, conflict, sync, working):
    response = client_for(curator).post(reverse("sync-conflict-resolve", args=[conflict.pk]), {"choice": "both"})
    assert response.status_code == 302
    conflict.refresh_from_db()
    assert (conflict.status, conflict.choice, conflict.resolved_by) == ("resolved", "both", curator)
    assert set(Lesson.objects.filter(status="active").values_list("text", flat=True)) == {
        "The retry loop uses a fixed 2 s delay",
        "The retry loop has <b>no</b> backoff",
    }
    sync()
    text = working().read_text()
    assert "fixed 2 s delay" in text and "has <b>no</b> backoff" in text


def test_a_viewer_cannot_settle_and_a_bad_choice_changes_nothing(client_for, viewer, curator, conflict):
    assert (
        client_for(viewer).post(reverse("sync-conflict-resolve", args=[conflict.pk]), {"choice": "file"}).status_code
        == 403
    )
    client = client_for(curator)
    response = client.post(reverse("sync-conflict-resolve", args=[conflict.pk]), {"choice": "neither"}, follow=True)
    assert b"Pick one of" in response.content
    assert SyncConflict.objects.get().status == "pending"
    client.post(reverse("sync-conflict-resolve", args=[conflict.pk]), {"choice": "file"})
    response = client.post(reverse("sync-conflict-resolve", args=[conflict.pk]), {"choice": "file"}, follow=True)
    assert b"already settled" in response.content
