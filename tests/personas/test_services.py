"""Persona writes: rename, archive, restore, permanent delete and the default personas."""

import pytest
from django.core.exceptions import ValidationError

from memory.models import Lesson, Memory
from personas import services
from personas.compiler import compile_system_prompt
from personas.defaults import DEFAULT_PERSONAS
from personas.models import Persona
from personas.schema import structured_errors
from tests.factories import MemoryFactory, PersonaFactory, make_lesson


@pytest.mark.django_db
def test_rename_keeps_memory_because_memory_follows_the_id():
    persona = PersonaFactory(name="Dana")
    memory = MemoryFactory(persona=persona)
    lesson = make_lesson(memory, "Barrel exports need updating when adding files.")

    services.persona_rename(persona=persona, new_name="Dana Reyes")

    memory.refresh_from_db()
    assert memory.persona.name == "Dana Reyes"
    assert list(Lesson.objects.filter(memory__persona__name="Dana Reyes")) == [lesson]


@pytest.mark.django_db
def test_rename_onto_another_name_ignoring_case_is_refused():
    PersonaFactory(name="Maya")
    other = PersonaFactory(name="Ola")
    with pytest.raises(ValidationError) as exc:
        services.persona_rename(persona=other, new_name="maya")
    assert "already exists" in exc.value.message_dict["name"][0]
    other.refresh_from_db()
    assert other.name == "Ola"


@pytest.mark.django_db
def test_archive_and_restore_keep_memory_and_toggle_active_lists():
    persona = PersonaFactory()
    memory = MemoryFactory(persona=persona)
    make_lesson(memory)

    services.persona_archive(persona=persona)
    persona.refresh_from_db()
    assert persona.is_archived
    assert persona not in Persona.objects.active()
    assert Memory.objects.filter(persona=persona).count() == 1
    assert Lesson.objects.filter(memory=memory).count() == 1

    services.persona_restore(persona=persona)
    persona.refresh_from_db()
    assert not persona.is_archived
    assert persona in Persona.objects.active()


@pytest.mark.django_db
def test_archive_twice_keeps_the_first_timestamp():
    persona = services.persona_archive(persona=PersonaFactory())
    first = persona.archived_at
    assert services.persona_archive(persona=persona).archived_at == first


@pytest.mark.django_db
def test_hard_delete_refuses_an_active_persona():
    persona = PersonaFactory(name="Kept")
    with pytest.raises(services.HardDeleteRefused, match="Archive"):
        services.persona_hard_delete(persona=persona, confirm_name="Kept")
    assert Persona.objects.filter(pk=persona.pk).exists()


@pytest.mark.django_db
@pytest.mark.parametrize("typed", ["", "kept", "Kep", "Kept!", None])
def test_hard_delete_needs_the_exact_name(typed):
    persona = services.persona_archive(persona=PersonaFactory(name="Kept"))
    with pytest.raises(services.HardDeleteRefused, match="did not match"):
        services.persona_hard_delete(persona=persona, confirm_name=typed)
    assert Persona.objects.filter(pk=persona.pk).exists()


@pytest.mark.django_db
def test_hard_delete_with_confirmation_removes_persona_and_memory():
    persona = PersonaFactory(name="Gone")
    memory = MemoryFactory(persona=persona)
    make_lesson(memory)
    services.persona_archive(persona=persona)
    assert services.persona_hard_delete(persona=persona, confirm_name="Gone") == "Gone"
    assert not Persona.objects.filter(pk=persona.pk).exists()
    assert not Memory.objects.filter(pk=memory.pk).exists()


@pytest.mark.django_db
def test_seed_defaults_creates_four_once():
    created, skipped = services.personas_seed_defaults()
    assert len(created) == 4 and skipped == []
    assert set(Persona.objects.values_list("role", flat=True)) == {
        "Security Reviewer",
        "Tech Lead / Architect",
        "QA Engineer",
        "Implementer",
    }
    created, skipped = services.personas_seed_defaults()
    assert created == [] and len(skipped) == 4
    assert Persona.objects.count() == 4


@pytest.mark.django_db
def test_seed_defaults_leaves_an_edited_or_archived_default_alone():
    name = DEFAULT_PERSONAS[0]["name"]
    mine = PersonaFactory(name=name.upper(), role="My own role")
    services.persona_archive(persona=mine)
    created, skipped = services.personas_seed_defaults()
    assert name.upper() in skipped and len(created) == 3
    mine.refresh_from_db()
    assert mine.role == "My own role" and mine.is_archived


def test_default_personas_match_the_schema_and_compile():
    for spec in DEFAULT_PERSONAS:
        for section in ("soul", "style", "skill"):
            assert structured_errors(section, spec[section]) == [], (spec["name"], section)
        prompt = compile_system_prompt(
            Persona(name=spec["name"], role=spec["role"], soul=spec["soul"], style=spec["style"], skill=spec["skill"])
        )
        assert prompt.startswith(f"You are {spec['name']}, {spec['role']}.")
        assert "## Soul" in prompt and "## Style" in prompt and "## Skill" in prompt
