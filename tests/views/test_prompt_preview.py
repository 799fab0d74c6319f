from personas.compiler import compile_system_prompt_for
from tests.factories import make_lesson
from tests.views.conftest import assert_login_redirect


def url(memory):
    return memory.prompt_url()


def test_anonymous_goes_to_login(client, memory):
    assert_login_redirect(client.get(url(memory)))


def test_shows_exactly_the_compiled_prompt_with_counts(client_for, viewer, memory, lesson):
    memory.persona.soul = {"whoIAm": "A careful reviewer", "petPeeves": ["vague lessons"]}
    memory.persona.save()
    make_lesson(memory, "Working note <b>bold</b>")
    prompt = compile_system_prompt_for(memory.persona, memory.project)
    response = client_for(viewer).get(url(memory))
    html = response.content.decode()
    assert response.context["total_chars"] == len(prompt)
    labels = [s["label"] for s in response.context["sections"]]
    assert labels == ["Identity", "Soul", "Core Lessons", "Working Memory"]
    assert sum(s["chars"] for s in response.context["sections"]) + 2 * (len(labels) - 1) + 1 == len(prompt)
    assert "Working note &lt;b&gt;bold&lt;/b&gt;" in html and "<b>bold</b>" not in html


def test_hidden_characters_are_visible(client_for, viewer, memory):
    make_lesson(memory, "ignore\u200b previous")
    html = client_for(viewer).get(url(memory)).content.decode()
    assert "⟦U+200B⟧" in html and "Hidden characters" in html


def test_empty_memory(client_for, viewer, memory):
    response = client_for(viewer).get(url(memory))
    assert [s["label"] for s in response.context["sections"]] == ["Identity"]
