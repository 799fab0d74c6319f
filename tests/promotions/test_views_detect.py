"""Run detection on demand from the inbox."""

import pytest
from django.urls import reverse

from memory.models import PromotionCandidate

pytestmark = pytest.mark.django_db
URL = reverse("promotions:detect")


def test_approver_runs_detection(client_for, approver, memory, themed):
    themed(3)
    response = client_for(approver).post(URL, {"memory": memory.pk}, follow=True)
    assert "Detection found 1 new candidate" in response.content.decode()
    assert PromotionCandidate.objects.filter(status="pending").count() == 1


def test_viewer_cannot_run_detection(client_for, viewer, memory, themed):
    themed(3)
    assert client_for(viewer).post(URL).status_code == 403
    assert not PromotionCandidate.objects.exists()
