"""Agents over MCP read neither expired lessons nor a disputed line unmarked."""

from datetime import date

import pytest
import time_machine

from memory.conflicts import CONFLICT_MARK
from memory.conflicts.services import conflicts_detect
from memory.models import Lesson
from tests.factories import MemoryFactory, PersonaFactory, make_lesson

pytestmark = pytest.mark.django_db(transaction=True)


def test_memory_resource_leaves_out_expired_lessons_and_marks_disputed_ones(mcp_http, make_token):
    persona = PersonaFactory()
    memory = MemoryFactory(persona=persona)
    expiring = make_lesson(memory, "Skip the flaky payments test for the migration week.")
    Lesson.objects.filter(pk=expiring.pk).update(expires_on=date(2026, 2, 1))
    make_lesson(memory, "Upload retries are capped at 3 attempts.", day=date(2026, 1, 5))
    make_lesson(memory, "Upload retries are now capped at 5 attempts.", day=date(2026, 1, 20))
    conflicts_detect(memory=memory)
    _, raw = make_token(persona, memory.project)

    async def read(client):
        listed = (await client.list_resources()).resources
        return (await client.read_resource(listed[0].uri)).contents[0].text

    with time_machine.travel(date(2026, 1, 31)):
        text = mcp_http.run(raw, read)
        assert "flaky payments" in text
        assert f"capped at 3 attempts. {CONFLICT_MARK}" in text
    with time_machine.travel(date(2026, 2, 2)):
        text = mcp_http.run(raw, read)
        assert "flaky payments" not in text and "capped at 5 attempts." in text
