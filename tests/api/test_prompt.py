"""GET /api/v1/memory/{persona}/{project}/prompt — the full compiled system prompt."""

from tests.api.conftest import memory_url
from tests.factories import make_lesson


def test_prompt_is_persona_sections_then_memory(agent, persona, project, memory):
    persona.soul = {"whoIAm": "A careful reviewer"}
    persona.save()
    make_lesson(memory, "Migrations in db/ are reviewed twice", category="DECISION", tier="core")
    response = agent.get(memory_url(persona, project, "prompt"))
    assert response.status_code == 200 and response["Content-Type"].startswith("text/plain")
    text = response.content.decode()
    assert text.startswith(f"You are {persona.name}, Tech Lead.")
    assert "A careful reviewer" in text
    assert text.index("A careful reviewer") < text.index("## Core Lessons")
    assert text.rstrip().endswith("## Working Memory")


def test_prompt_without_memory_is_just_the_persona(agent, persona, project):
    assert agent.get(memory_url(persona, project, "prompt")).content.decode() == f"You are {persona.name}, Tech Lead.\n"


def test_prompt_query_count_is_constant(agent, persona, project, memory, django_assert_num_queries):
    url = memory_url(persona, project, "prompt")
    make_lesson(memory, "core in a.py", category="PATTERN", tier="core")
    agent.get(url)
    # persona (soul, style, skill); the token's scope, the memory's version and the compiled memory
    # come from the cache
    with django_assert_num_queries(1):
        agent.get(url)
    for i in range(50):
        make_lesson(memory, f"lesson {i} in a.py")
    agent.get(url)
    with django_assert_num_queries(1):
        agent.get(url)


def test_prompt_renders_nested_soul_style_and_skill_as_markdown_lists(agent, persona, project, memory):
    persona.soul = {"opinions": {"dependencies": ["Pin them", "Audit them"], "tests": "Real database"}}
    persona.style = {"emojiUsage": {"allowed": False, "favourites": []}, "wordsUsed": ["concretely"]}
    persona.skill = {"modes": {"review": {"focus": ["security", "naming"]}}}
    persona.save()
    text = agent.get(memory_url(persona, project, "prompt")).content.decode()
    opinions = text[
        text.index("### Opinions\n") : text.index("\n\n## Style")
    ]  # key order is the database's (jsonb sorts)
    assert "\n- dependencies:\n  - Pin them\n  - Audit them" in opinions and "\n- tests: Real database" in opinions
    assert "### Words I use\n- concretely\n### Emoji\n- allowed: False\n" in text
    assert "### Modes\n- review:\n  - focus:\n    - security\n    - naming\n" in text
    assert "[" not in text and "{" not in text
