"""The agent context leaves out expired lessons from their expires_on day and marks a disputed line."""

from datetime import date

import time_machine

from memory.conflicts import CONFLICT_MARK
from memory.conflicts.services import conflicts_detect
from memory.models import Lesson
from tests.api.conftest import memory_url
from tests.factories import make_lesson


def test_an_expired_lesson_leaves_the_context_on_its_day(agent, memory, persona, project):
    lesson = make_lesson(memory, "Read-only mode for the admin until the 2.3 rollout.")
    make_lesson(memory, "The admin lives at /admin/.")
    Lesson.objects.filter(pk=lesson.pk).update(expires_on=date(2026, 2, 1))
    url = memory_url(persona, project, "context")
    with time_machine.travel(date(2026, 1, 31)):
        before = agent.get(url)
        assert "Read-only mode" in before.content.decode()
        assert lesson.pk in [item["id"] for item in agent.get(url + "?format=json").json()["lessons"]]
    with time_machine.travel(date(2026, 2, 1)):
        # Same version, another day: the agent's ETag no longer matches, so it gets the new text.
        after = agent.client.get(url, headers={**agent.headers, "If-None-Match": before["ETag"]})
        assert after.status_code == 200 and "Read-only mode" not in after.content.decode()
        data = agent.get(url + "?format=json").json()
        assert lesson.pk not in [item["id"] for item in data["lessons"]] + data["cut_lesson_ids"]


def test_a_disputed_line_is_marked_in_text_and_json(agent, memory, persona, project):
    older = make_lesson(memory, "Upload retries are capped at 3 attempts.", day=date(2026, 1, 5))
    newer = make_lesson(memory, "Upload retries are now capped at 5 attempts.", day=date(2026, 2, 14))
    conflicts_detect(memory=memory)
    url = memory_url(persona, project, "context")
    assert f"capped at 3 attempts. {CONFLICT_MARK}" in agent.get(url).content.decode()
    lessons = {item["id"]: item for item in agent.get(url + "?format=json").json()["lessons"]}
    assert lessons[older.pk]["text"].endswith(CONFLICT_MARK)
    assert CONFLICT_MARK not in lessons[newer.pk]["text"]
