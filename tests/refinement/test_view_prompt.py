import pytest
from django.urls import reverse

from memory.models import RefinementPromptVersion
from memory.refinement.prompts import DEFAULT_PERSONA_GUIDANCE, SAFETY_RULES

from .helpers import core, run_with
from .scripted import ScriptedEngine

pytestmark = pytest.mark.django_db


def url(persona):
    return reverse("refinement:prompt", args=[persona.pk])


def test_only_approvers(client_for, viewer, curator, memory):
    for user in (viewer, curator):
        c = client_for(user)
        assert c.get(url(memory.persona)).status_code == 403
        assert c.post(url(memory.persona), {"text": "x"}).status_code == 403
        assert c.post(reverse("refinement:prompt-preview", args=[memory.persona.pk]), {"text": "x"}).status_code == 403


def test_page_shows_rules_default_and_ledger(client_for, approver, memory):
    lesson = core(memory, "Use <em>feature flags</em> for risky migrations")
    body = client_for(approver).get(url(memory.persona)).content.decode()
    assert "Ground rules (fixed" in body
    assert DEFAULT_PERSONA_GUIDANCE.splitlines()[0] in body
    assert f"id {lesson.pk} [PATTERN]" in body
    assert "&lt;em&gt;feature flags&lt;/em&gt;" in body and "<em>feature flags</em>" not in body


def test_live_preview_partial(client_for, approver, memory):
    core(memory, "A lesson")
    response = client_for(approver).post(
        reverse("refinement:prompt-preview", args=[memory.persona.pk]),
        {"text": "Keep <all> voice notes", "memory": memory.pk},
        HTTP_HX_REQUEST="true",
    )
    body = response.content.decode()
    assert body.lstrip().startswith('<div id="preview">')
    assert "Keep &lt;all&gt; voice notes" in body
    assert body.index("Ground rules") < body.index("Keep &lt;all&gt;") < body.index("Core memory ledger")
    assert not RefinementPromptVersion.objects.exists()


def test_preview_button_without_js_saves_nothing(client_for, approver, memory):
    response = client_for(approver).post(url(memory.persona), {"text": "draft guidance", "preview": "1"})
    assert response.status_code == 200 and "draft guidance" in response.content.decode()
    memory.persona.refresh_from_db()
    assert memory.persona.refinement_prompt == ""


def test_save_versions_and_restore(client_for, approver, memory):
    c = client_for(approver)
    persona = memory.persona
    c.post(url(persona), {"text": "First guidance"})
    c.post(url(persona), {"text": "Second guidance"})
    persona.refresh_from_db()
    assert persona.refinement_prompt == "Second guidance"
    versions = list(RefinementPromptVersion.objects.filter(persona=persona).order_by("number"))
    assert [v.text for v in versions] == ["First guidance", "Second guidance"]
    assert all(v.created_by == approver for v in versions)
    page = c.get(url(persona)).content.decode()
    assert "v2" in page and "Restore" in page
    response = c.post(reverse("refinement:prompt-restore", args=[persona.pk, versions[0].pk]), follow=True)
    assert b"Restored version 1 as version 3" in response.content
    persona.refresh_from_db()
    assert persona.refinement_prompt == "First guidance"
    assert RefinementPromptVersion.objects.filter(persona=persona).count() == 3
    # the next run sends the restored guidance and records the version it used
    core(memory, "A lesson")
    run = run_with(memory, ScriptedEngine([("complete", {})]))
    assert "First guidance" in run.prompt_sent and run.prompt_sent.startswith(SAFETY_RULES)
    assert run.prompt_version.number == 3


def test_invalid_input_changes_nothing(client_for, approver, memory):
    c = client_for(approver)
    response = c.post(url(memory.persona), {"text": "x" * 9000})
    assert response.status_code == 400
    assert "at most 8000 characters" in response.content.decode()
    c.post(url(memory.persona), {"text": "Same"})
    again = c.post(url(memory.persona), {"text": "Same"})
    assert again.status_code == 400 and "already" in again.content.decode()
    assert RefinementPromptVersion.objects.count() == 1


def test_query_count_constant_with_versions(client_for, approver, memory, django_assert_num_queries):
    c = client_for(approver)
    core(memory, "A lesson")
    for i in range(2):
        c.post(url(memory.persona), {"text": f"v{i}"})
    c.get(url(memory.persona))
    with django_assert_num_queries(9):  # the same queries plus the promotions badge count
        c.get(url(memory.persona))
    for i in range(10):
        c.post(url(memory.persona), {"text": f"w{i}"})
        core(memory, f"Another lesson {i}")
    with django_assert_num_queries(9):  # the same queries plus the promotions badge count
        c.get(url(memory.persona))
