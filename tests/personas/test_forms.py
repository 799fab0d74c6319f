"""Soul, style and skill are validated structured data: every mistake is a form error naming the field."""

import pytest

from personas.forms import PersonaForm
from personas.schema import structured_errors
from tests.factories import PersonaFactory


def _form(**overrides):
    data = {
        "name": "Iris",
        "role": "Reviewer",
        "avatar": "",
        "is_active": "on",
        "soul": '{"whoIAm": "I review.", "worldview": ["Inputs lie."]}',
        "style": "{}",
        "skill": "",
        "provider": "",
        "model_name": "",
        "max_tokens": "1024",
        "temperature": "0.5",
        "base_url": "",
        "system_prompt_override": "",
        "reflection_prompt": "",
        "refinement_prompt": "",
        "refinement_threshold": "0.9",
    }
    data.update(overrides)
    return PersonaForm(data=data)


@pytest.mark.django_db
def test_valid_structured_data_is_saved_as_objects():
    form = _form(skill='{"modes": {"review": "Read the diff."}, "additionalInstructions": ["Be brief."]}')
    assert form.is_valid(), form.errors
    persona = form.save()
    assert persona.soul == {"whoIAm": "I review.", "worldview": ["Inputs lie."]}
    assert persona.style == {}
    assert persona.skill["modes"] == {"review": "Read the diff."}


@pytest.mark.django_db
def test_broken_json_is_an_error_on_that_field_with_its_position():
    form = _form(style='{"tone": "calm",}')
    assert not form.is_valid()
    assert list(form.errors) == ["style"]
    message = form.errors["style"][0]
    assert message.startswith("style is not valid JSON") and "line 1" in message


@pytest.mark.django_db
@pytest.mark.parametrize(
    "field,value,expected",
    [
        ("soul", '{"worldview": "one string"}', "soul.worldview must be a list of strings, not a string."),
        ("soul", '{"whoIAm": ["a", "list"]}', "soul.whoIAm must be a string, not a list."),
        ("soul", '{"expertise": ["ok", 3]}', "soul.expertise[1] must be a string, not a number."),
        (
            "soul",
            '{"opinions": {"tests": 5}}',
            "soul.opinions.tests must be a string or a list of strings, not a number.",
        ),
        ("style", '{"emojiUsage": "rare"}', "style.emojiUsage must be an object, not a string."),
        (
            "skill",
            '{"mode": {}}',
            "skill.mode is not a skill field (expected one of: modes, interpolationRules, additionalInstructions).",
        ),
        ("skill", '["modes"]', "skill must be a JSON object of named fields, not a list."),
    ],
)
def test_wrong_field_types_name_the_field(field, value, expected):
    form = _form(**{field: value})
    assert not form.is_valid()
    assert expected in form.errors[field]


@pytest.mark.django_db
def test_blank_structured_fields_mean_empty_objects():
    form = _form(soul="", style="  ", skill="")
    assert form.is_valid(), form.errors
    assert form.cleaned_data["soul"] == {} and form.cleaned_data["skill"] == {}


@pytest.mark.django_db
def test_name_is_unique_ignoring_case_as_a_form_error():
    PersonaFactory(name="Vera")
    form = _form(name="  vERA ")
    assert not form.is_valid()
    assert list(form.errors) == ["name"]
    assert "already exists" in form.errors["name"][0]


@pytest.mark.django_db
def test_renaming_to_a_different_case_of_its_own_name_is_allowed():
    persona = PersonaFactory(name="vera")
    form = PersonaForm(data={**_form().data, "name": "Vera"}, instance=persona)
    assert form.is_valid(), form.errors


def test_schema_reports_every_problem_at_once():
    errors = structured_errors("style", {"tone": 1, "wordsUsed": "x", "nope": []})
    assert len(errors) == 3
