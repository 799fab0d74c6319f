"""Persona names become folder names on export: they are checked where personas are made."""

import pytest
from django.core.exceptions import ValidationError
from django.core.management.base import CommandError

from personas.models import Persona
from personas.services import persona_create, persona_rename
from tests.factories import PersonaFactory
from tests.formats.conftest import write_tree

pytestmark = pytest.mark.django_db

BAD = ["../../../x", "/abs", "a/b", "a\\b", ".", "..", ".hidden", "tab\there", "line\u2028break"]


@pytest.mark.parametrize("name", BAD)
def test_services_refuse_a_name_that_cannot_be_a_folder(name):
    with pytest.raises(ValidationError) as exc:
        persona_create(name=name)
    assert "name" in exc.value.message_dict
    assert not Persona.objects.exists()


@pytest.mark.parametrize("name", BAD)
def test_rename_refuses_it_too(name):
    persona = PersonaFactory(name="Dev")
    with pytest.raises(ValidationError):
        persona_rename(persona=persona, new_name=name)
    persona.refresh_from_db()
    assert persona.name == "Dev"


def test_ordinary_names_are_fine():
    assert persona_create(name="Maya López (security)").name == "Maya López (security)"
    assert persona_create(name="dev.bot").name == "dev.bot"


def test_import_refuses_a_persona_folder_with_a_control_character(tmp_path, run_command):
    root = write_tree(tmp_path, {"Bell\x07/memories/app/working.md": "- [OBSERVATION] x\n"})
    with pytest.raises(CommandError, match="control character"):
        run_command("import_memory", str(root))
    assert not Persona.objects.exists()
