"""Editing one proposed line, with and without htmx."""

import pytest
from django.urls import reverse

from memory.compaction.services import compaction_propose
from tests.compaction.helpers import ScriptedEngine

pytestmark = pytest.mark.django_db


@pytest.fixture
def proposal(memory, lessons, good_output, actor):
    return compaction_propose(memory=memory, actor=actor, engine=ScriptedEngine(good_output))


def test_edit_line_without_javascript(client_for, approver, proposal, lessons):
    client = client_for(approver)
    line = next(line for line in proposal.lines.all() if line.source_ids == [lessons["f"].pk])
    url = reverse("compaction-line-edit", args=[proposal.pk, line.pk])
    page = client.get(url).content.decode()
    assert 'name="text"' in page and "Dropped lessons" in page  # full page, this line in edit mode
    bad = client.post(url, {"category": "OBSERVATION", "text": line.text, "refs": ""}).content.decode()
    assert "is in no proposed line" in bad
    response = client.post(
        url, {"category": "TODO", "text": "Batch the report queries", "refs": "src/reports/views.py#L12-L30"}
    )
    assert response.status_code == 302
    line.refresh_from_db()
    assert line.text == "Batch the report queries" and line.edited


def test_edit_line_with_htmx_gets_the_row_partial(client_for, approver, proposal, lessons):
    client = client_for(approver)
    line = next(line for line in proposal.lines.all() if line.source_ids == [lessons["f"].pk])
    url = reverse("compaction-line-edit", args=[proposal.pk, line.pk])
    partial = client.get(url, headers={"HX-Request": "true"}).content.decode()
    assert partial.lstrip().startswith("<tr") and "Dropped lessons" not in partial
    response = client.post(
        url,
        {"category": "TODO", "text": "Batch the report queries", "refs": "src/reports/views.py#L12-L30"},
        headers={"HX-Request": "true"},
    )
    assert response.status_code == 200 and response["HX-Redirect"].startswith(
        reverse("compaction-detail", args=[proposal.pk])
    )
