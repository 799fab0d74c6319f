"""The reflection prompt: role flavour, interaction context and the answer rules."""

import pytest

from memory.reflection.prompts import build_reflection_prompt, role_family
from tests.factories import PersonaFactory


@pytest.mark.parametrize(
    "role, family",
    [
        ("Implementer", "implementer"),
        ("Senior Developer", "implementer"),
        ("Tech Lead / Architect", "tech_lead"),
        ("QA Engineer", "qa"),
        ("Test automation", "qa"),
        ("Security Reviewer", "security"),
        ("Data Scientist", "generic"),
        ("", "generic"),
    ],
)
def test_role_family(role, family):
    assert role_family(role) == family


@pytest.mark.parametrize(
    "role, phrases",
    [
        ("Implementer", ["just implemented", "developer", "pitfalls"]),
        ("Tech Lead", ["just reviewed", "tech lead", "architecture decisions"]),
        ("QA Engineer", ["just tested", "QA engineer", "flaky", "coverage gaps"]),
        ("Security Reviewer", ["security reviewer", "auth", "dependencies"]),
        ("Data Scientist", ["Data Scientist", "the way a data scientist would"]),
        ("SRE", ["the way an SRE would"]),
    ],
)
def test_prompt_is_role_flavoured(interaction, role, phrases):
    persona = interaction.memory.persona
    persona.role = role
    persona.save()
    prompt = build_reflection_prompt(interaction)
    assert prompt.startswith(f"You are {persona.name}")
    assert interaction.memory.project.name in prompt
    for phrase in phrases:
        assert phrase in prompt


def test_the_four_default_roles_read_differently(interaction):
    prompts = set()
    for role in ("Implementer", "Tech Lead", "QA Engineer", "Security Reviewer", "Product Manager"):
        persona = PersonaFactory(role=role)
        prompts.add(build_reflection_prompt(interaction, persona=persona).split("\n\n")[0].replace(persona.name, "X"))
    assert len(prompts) == 5


def test_custom_reflection_prompt_replaces_the_framing_but_keeps_the_rules(interaction):
    persona = interaction.memory.persona
    persona.reflection_prompt = "You are the release captain. Think about what broke the release train."
    persona.save()
    prompt = build_reflection_prompt(interaction)
    assert prompt.startswith("You are the release captain.")
    assert "just reviewed" not in prompt
    assert "- [CATEGORY] lesson (ref: path/to/file.py#L10-L24)" in prompt


def test_prompt_carries_the_interaction_context(interaction):
    prompt = build_reflection_prompt(interaction)
    assert "Trigger: pr_review" in prompt
    assert "Outcome: changes requested" in prompt
    assert "Files changed: auth/session.py#L20-L48, auth/tests/test_session.py" in prompt
    assert "tokens never expire on refresh" in prompt


def test_missing_context_is_said_plainly(interaction):
    interaction.outcome = ""
    interaction.files_changed = []
    prompt = build_reflection_prompt(interaction)
    assert "Outcome: not reported" in prompt and "Files changed: none reported" in prompt


def test_prompt_states_the_rules(interaction):
    prompt = build_reflection_prompt(interaction)
    assert "1 to 5 bullets" in prompt
    assert "[CATEGORY]" in prompt and "(ref: " in prompt
    for category in ("PATTERN", "DECISION", "ARCHITECTURE", "OBSERVATION", "HYPOTHESIS", "TODO"):
        assert f"- {category}: " in prompt
    assert "GOOD lessons" in prompt and "BAD lessons" in prompt
    assert "- More tests are needed" in prompt
    assert "no introduction" in prompt
