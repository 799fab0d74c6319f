"""Recall: the JSON context carries ids and usage instructions; a lesson comes back with its sources."""

from memory.models import Lesson
from tests.api.conftest import memory_url
from tests.factories import make_lesson
from tests.pipeline.helpers import make_interaction, run_pipeline


def test_context_json_has_usage_and_text_with_ids(agent, memory, persona, project):
    core = make_lesson(memory, "Core rule in auth/tokens.py", category="PATTERN", tier="core")
    working = make_lesson(memory, "Observed in api/views.py", refs=["api/views.py#L3"])
    data = agent.get(memory_url(persona, project, "context") + "?format=json").json()
    assert "GET /api/v1/lessons/{id}" in data["usage"]
    text = data["text_with_ids"]
    assert f"- [{core.pk}] [PATTERN] Core rule in auth/tokens.py" in text
    assert f"- [{working.pk}] [OBSERVATION] Observed in api/views.py (ref: api/views.py#L3)" in text
    assert text.index("## Core Lessons") < text.index("## Working Memory")


def test_recall_returns_the_source_entries_of_an_observation(agent, memory, persona, project):
    run_pipeline(memory, make_interaction(memory))
    lesson = Lesson.objects.get(memory=memory, source_entry_ids=["m3"])
    data = agent.get(f"/api/v1/lessons/{lesson.pk}").json()
    assert data["source_entry_ids"] == ["m3"]
    assert data["source_entries"] == [
        {"id": "m3", "role": "user", "at": "2026-03-02 09:20", "text": "Never push directly to the main branch."}
    ]
    assert data["observed_at"].startswith("2026-03-02T09:20")
