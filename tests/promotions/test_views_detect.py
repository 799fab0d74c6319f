"""“Detect now” queues detection for the memory (or every active one) and the inbox shows how it went."""

import pytest
from django.urls import reverse

from memory.models import PromotionCandidate
from tests.factories import MemoryFactory

pytestmark = pytest.mark.django_db
URL = reverse("promotions:detect")


def test_approver_queues_detection_and_sees_its_outcome(
    client_for, approver, memory, themed, django_capture_on_commit_callbacks
):
    themed(3)
    client = client_for(approver)
    with django_capture_on_commit_callbacks(execute=False) as queued:
        response = client.post(URL, {"memory": memory.pk}, follow=True)
    page = response.content.decode()
    assert "Detection queued for" in page and "Detection is queued." in page
    assert not PromotionCandidate.objects.exists()  # nothing ran inside the request
    assert len(queued) == 1
    queued[0]()  # the worker picks the job up
    page = client.get(reverse("promotions:inbox"), {"memory": memory.pk}).content.decode()
    assert "Detection found 1 new candidate." in page
    assert PromotionCandidate.objects.filter(status="pending").count() == 1


def test_detect_all_skips_memories_of_inactive_personas(
    client_for, approver, memory, django_capture_on_commit_callbacks
):
    archived = MemoryFactory()
    archived.persona.is_active = False
    archived.persona.save()
    with django_capture_on_commit_callbacks(execute=False) as queued:
        client_for(approver).post(URL)
    assert len(queued) == 1


def test_viewer_cannot_run_detection(client_for, viewer, memory, themed):
    themed(3)
    assert client_for(viewer).post(URL).status_code == 403
    assert not PromotionCandidate.objects.exists()
