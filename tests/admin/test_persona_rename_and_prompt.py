"""Renaming a persona in the admin keeps agents working (old name kept as an alias) and says so;
editing the refinement prompt there creates a version like the prompt page does."""

import pytest
from django.urls import reverse

from memory.models import RefinementPromptVersion
from memory.tokens import agent_token_create
from personas.models import PersonaAlias
from personas.services import check_persona_name, persona_rename
from tests.admin.test_persona_change import _post_data
from tests.factories import MemoryFactory, PersonaFactory, make_lesson

pytestmark = pytest.mark.django_db


def _context(client, raw, name, slug):
    return client.get(f"/api/v1/memory/{name}/{slug}/context", headers={"Authorization": f"Bearer {raw}"})


def test_rename_in_the_admin_keeps_the_old_name_working_for_agents(admin_client, client):
    memory = MemoryFactory(persona=PersonaFactory(name="Vera"))
    make_lesson(memory, "Tokens are hashed with sha256", category="DECISION")
    _, raw = agent_token_create(persona=memory.persona, name="bot")
    url = reverse("admin:personas_persona_change", args=[memory.persona.pk])
    assert "The old name stays as an alias" in admin_client.get(url).content.decode()

    response = admin_client.post(url, _post_data(memory.persona, name="Veronica"))
    assert response.status_code == 302
    assert list(memory.persona.aliases.values_list("name", flat=True)) == ["Vera"]
    assert "Vera · " in admin_client.get(url).content.decode()  # shown with the persona

    for name in ("Vera", "Veronica"):
        response = _context(client, raw, name, memory.project.slug)
        assert response.status_code == 200, response.content
        assert "Tokens are hashed with sha256" in response.content.decode()


def test_another_personas_old_name_is_403_and_cannot_be_taken(client):
    vera, maya = PersonaFactory(name="Vera"), PersonaFactory(name="Maya")
    project = MemoryFactory(persona=vera).project
    persona_rename(persona=vera, new_name="Veronica")
    _, raw = agent_token_create(persona=maya, name="bot")
    assert _context(client, raw, "vera", project.slug).status_code == 403
    assert _context(client, raw, "Nobody", project.slug).status_code == 404
    with pytest.raises(Exception, match="old name of “Veronica”"):
        check_persona_name("VERA")
    persona_rename(persona=vera, new_name="Vera")  # taking its own old name back is fine
    assert list(PersonaAlias.objects.values_list("name", flat=True)) == ["Veronica"]


def test_refinement_prompt_edited_in_the_admin_is_a_new_version(admin_client, client):
    persona = PersonaFactory(name="Iris")
    url = reverse("admin:personas_persona_change", args=[persona.pk])
    assert "Every edit is saved as a new version" in admin_client.get(url).content.decode()
    admin_client.post(url, _post_data(persona, refinement_prompt="Only merge exact duplicates."))
    admin_client.post(url, _post_data(persona, refinement_prompt="Only merge exact duplicates; never delete."))
    versions = list(RefinementPromptVersion.objects.filter(persona=persona).values_list("number", "text", "note"))
    assert versions == [
        (2, "Only merge exact duplicates; never delete.", "edited in the admin"),
        (1, "Only merge exact duplicates.", "edited in the admin"),
    ]
    persona.refresh_from_db()
    assert persona.refinement_prompt == "Only merge exact duplicates; never delete."
    admin_client.post(
        url, _post_data(persona, refinement_prompt="Only merge exact duplicates; never delete.", role="Renamed role")
    )
    assert RefinementPromptVersion.objects.filter(persona=persona).count() == 2  # unchanged text: no version
