import pytest

from memory.refinement import prompts

from .helpers import core

pytestmark = pytest.mark.django_db


def test_prompt_order_and_framing(memory):
    a = core(memory, "Keep audit logs for seven years")
    b = core(memory, "Guard this one", protected=True)
    text = prompts.build_refinement_prompt(memory.persona, memory)
    rules, guidance, ledger = (
        text.index("Ground rules"),
        text.index(prompts.DEFAULT_PERSONA_GUIDANCE),
        text.index("ledger"),
    )
    assert rules < guidance < ledger
    assert f"- id {a.pk} [PATTERN]: Keep audit logs" in text
    assert f"- id {b.pk} [PATTERN] (protected): Guard this one" in text
    lowered = (text + prompts.CONSENT_QUESTION).lower()
    for banned in ("merge", "compress", "denser", "obsolete", "laws"):
        assert banned not in lowered
    assert "at most 10" in text and "zero changes" in text
    assert "zero changes" in prompts.CONSENT_QUESTION and "YES or NO" in prompts.CONSENT_QUESTION


def test_persona_guidance_replaces_the_default_but_not_the_rules(memory):
    memory.persona.refinement_prompt = "Chris keeps structural mass; touch nothing about load paths."
    text = prompts.build_refinement_prompt(memory.persona, memory)
    assert "Chris keeps structural mass" in text and prompts.DEFAULT_PERSONA_GUIDANCE not in text
    assert text.startswith(prompts.SAFETY_RULES)


@pytest.mark.parametrize(
    "answer,expected",
    [
        ("YES", True),
        ("yes", True),
        ("Yes.", True),
        ("**YES**", True),
        ("YES, go ahead", True),
        ("NO", False),
        ("", False),
        ("  ", False),
        ("Yesterday", False),
        ("I guess yes", False),
        ("YES but only if you skip the vows and also the quotes", False),
    ],
)
def test_only_a_clear_yes_is_consent(answer, expected):
    assert prompts.consent_given(answer) is expected
