"""The persona add/change pages: validated structured fields, names, and renames that keep memory."""

import json

import pytest
from django.urls import reverse

from memory.models import Lesson, Memory
from personas.models import Persona
from tests.factories import MemoryFactory, PersonaFactory, make_lesson


def _post_data(persona=None, **overrides):
    data = {
        "name": persona.name if persona else "Iris",
        "role": persona.role if persona else "Reviewer",
        "avatar": "",
        "is_active": "on",
        "soul": json.dumps(persona.soul if persona else {"whoIAm": "I check things."}),
        "style": json.dumps(persona.style if persona else {}),
        "skill": json.dumps(persona.skill if persona else {}),
        "provider": "",
        "model_name": "",
        "max_tokens": "1024",
        "temperature": "0.5",
        "base_url": "",
        "detection_token_budget": "200000",
        "system_prompt_override": "",
        "reflection_prompt": "",
        "refinement_prompt": "",
        "refinement_threshold": "0.9",
        # the read-only memory inline's management form
        "memories-TOTAL_FORMS": "0",
        "memories-INITIAL_FORMS": "0",
        "memories-MIN_NUM_FORMS": "0",
        "memories-MAX_NUM_FORMS": "1000",
    }
    data.update(overrides)
    return data


@pytest.mark.django_db
def test_add_persona(admin_client):
    response = admin_client.post(reverse("admin:personas_persona_add"), _post_data())
    assert response.status_code == 302, response.context["adminform"].form.errors if response.context else ""
    assert Persona.objects.get(name="Iris").soul == {"whoIAm": "I check things."}


@pytest.mark.django_db
def test_change_page_shows_structured_fields_as_pretty_json(admin_client):
    persona = PersonaFactory(soul={"whoIAm": "Careful.", "worldview": ["One", "Two"]})
    response = admin_client.get(reverse("admin:personas_persona_change", args=[persona.pk]))
    assert response.status_code == 200
    html = response.content.decode()
    assert "&quot;worldview&quot;: [\n    &quot;One&quot;" in html
    assert "Preview prompt" in html


@pytest.mark.django_db
def test_bad_json_is_a_form_error_not_a_server_error(admin_client):
    persona = PersonaFactory(soul={"whoIAm": "Before."})
    url = reverse("admin:personas_persona_change", args=[persona.pk])
    response = admin_client.post(url, _post_data(persona, soul='{"whoIAm": "After."'))
    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert "soul is not valid JSON" in errors["soul"][0]
    # what was typed is shown again for fixing, and nothing changed
    assert "{&quot;whoIAm&quot;: &quot;After.&quot;" in response.content.decode()
    persona.refresh_from_db()
    assert persona.soul == {"whoIAm": "Before."}


@pytest.mark.django_db
def test_wrong_field_type_is_a_form_error_naming_the_field(admin_client):
    persona = PersonaFactory()
    url = reverse("admin:personas_persona_change", args=[persona.pk])
    response = admin_client.post(url, _post_data(persona, style='{"wordsUsed": "seam"}'))
    assert response.status_code == 200
    assert response.context["adminform"].form.errors["style"] == [
        "style.wordsUsed must be a list of strings, not a string."
    ]


@pytest.mark.django_db
def test_duplicate_name_in_another_case_is_a_clear_error(admin_client):
    PersonaFactory(name="Noor")
    response = admin_client.post(reverse("admin:personas_persona_add"), _post_data(name="NOOR"))
    assert response.status_code == 200
    assert "already exists" in response.context["adminform"].form.errors["name"][0]
    assert Persona.objects.filter(name__iexact="noor").count() == 1


@pytest.mark.django_db
def test_rename_in_the_admin_keeps_memory(admin_client):
    persona = PersonaFactory(name="Carl")
    memory = MemoryFactory(persona=persona)
    lesson = make_lesson(memory, "The auth module is tightly coupled to sessions.")
    url = reverse("admin:personas_persona_change", args=[persona.pk])
    response = admin_client.post(url, _post_data(persona, name="Carla"))
    assert response.status_code == 302
    persona.refresh_from_db()
    assert persona.name == "Carla"
    assert Memory.objects.get(pk=memory.pk).persona_id == persona.pk
    assert Lesson.objects.get(pk=lesson.pk).memory.persona.name == "Carla"


@pytest.mark.django_db
def test_avatar_help_says_initials_not_emoji(admin_client):
    html = admin_client.get(reverse("admin:personas_persona_add")).content.decode()
    help_text = html[html.index('id="id_avatar_helptext"') :][:300]
    assert "initials" in help_text and "emoji" not in help_text.lower()
