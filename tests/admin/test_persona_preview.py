"""The read-only preview of a persona's compiled system prompt, with memory for a chosen project."""

import pytest
from django.urls import reverse

from personas.compiler import compile_system_prompt_for
from tests.factories import MemoryFactory, PersonaFactory, ProjectFactory, make_lesson


def _url(persona):
    return reverse("admin:personas_persona_preview", args=[persona.pk])


@pytest.mark.django_db
def test_preview_shows_persona_sections_then_memory_for_the_chosen_project(admin_client):
    persona = PersonaFactory(name="Vera", role="Security Reviewer", soul={"whoIAm": "I read diffs as an attacker."})
    with_memory = ProjectFactory(name="Storefront")
    other = ProjectFactory(name="Another")
    memory = MemoryFactory(persona=persona, project=with_memory)
    make_lesson(
        memory,
        "Scope order lookups by the session's customer id.",
        tier="core",
        category="PATTERN",
        refs="src/routes/orders.ts#L44-L61",
    )
    make_lesson(memory, "Rotate the key that leaked in CI.", category="TODO")

    response = admin_client.get(_url(persona), {"project": with_memory.pk})
    assert response.status_code == 200
    prompt = response.context["prompt"]
    assert prompt == compile_system_prompt_for(persona, with_memory)
    assert (
        prompt.index("I read diffs as an attacker.")
        < prompt.index("## Core Lessons")
        < prompt.index("## Working Memory")
    )
    html = response.content.decode()
    assert "Scope order lookups by the session&#x27;s customer id." in html
    assert "1 lesson kept, 0 cut" in html

    empty = admin_client.get(_url(persona), {"project": other.pk})
    assert "## Core Lessons" not in empty.context["prompt"]
    assert "has no memory of Another yet" in empty.content.decode()


@pytest.mark.django_db
def test_preview_defaults_to_a_project_with_memory(admin_client):
    persona = PersonaFactory()
    ProjectFactory(name="Aardvark")  # sorts first, but has no memory
    project = ProjectFactory(name="Zebra")
    make_lesson(MemoryFactory(persona=persona, project=project), "Something learned.")
    response = admin_client.get(_url(persona))
    assert response.context["project"] == project


@pytest.mark.django_db
def test_preview_escapes_lesson_text(admin_client):
    persona = PersonaFactory()
    memory = MemoryFactory(persona=persona)
    make_lesson(memory, "Vendor name was <script>alert(1)</script> in the report.")
    html = admin_client.get(_url(persona)).content.decode()
    assert "<script>alert(1)</script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


@pytest.mark.django_db
def test_preview_without_projects_shows_the_bare_prompt(admin_client):
    persona = PersonaFactory(name="Solo", role="Implementer")
    response = admin_client.get(_url(persona))
    assert response.status_code == 200
    assert response.context["prompt"].startswith("You are Solo, Implementer.")


@pytest.mark.django_db
def test_unknown_project_is_404(admin_client):
    persona = PersonaFactory()
    assert admin_client.get(_url(persona), {"project": "99999"}).status_code == 404
    assert admin_client.get(_url(persona), {"project": "abc"}).status_code == 404


@pytest.mark.django_db
def test_preview_needs_admin_access(client, viewer):
    persona = PersonaFactory()
    client.force_login(viewer)
    response = client.get(_url(persona))
    assert response.status_code == 302 and "/admin/login/" in response.url
