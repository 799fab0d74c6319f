"""An agent writes through MCP, a person approves the promotion in the dashboard, the agent reads it as core.

The agent restates one lesson on three days (time travels for its sessions only); detection
proposes it; the approver approves it in Chromium; the agent's next get_memory lists it under
Core Lessons.
"""

from datetime import UTC, datetime

import pytest
import time_machine

from memory.models import Lesson, PromotionCandidate
from tests.factories import MemoryFactory
from tests.mcp.conftest import HttpTransport, serve_http, text_of

# Near-identical restatements of one lesson, about one file, on three distinct days.
SESSIONS = [
    (datetime(2026, 3, 2, 10, tzinfo=UTC), "Run the database migrations before starting the test suite"),
    (datetime(2026, 3, 9, 10, tzinfo=UTC), "Run database migrations before starting the test suite"),
    (
        datetime(2026, 3, 16, 10, tzinfo=UTC),
        "Always run the database migrations before starting the test suite",
    ),
]


@pytest.fixture
def mcp_http(transactional_db):
    with serve_http() as base_url:
        yield HttpTransport(base_url)


def test_mcp_lessons_promoted_in_the_browser_reach_the_agent(page, login, make_user, screenshot, mcp_http):
    from memory.tokens import agent_token_create

    memory = MemoryFactory(persona__name="Dev Agent", project__slug="shop", project__name="Shop")
    _, raw = agent_token_create(persona=memory.persona, project=memory.project, name="claude code")

    for moment, text in SESSIONS:

        async def session(client, text=text):
            return await client.call_tool("log_learning", {"text": text, "refs": ["tests/conftest.py"]})

        with time_machine.travel(moment, tick=True):
            result = mcp_http.run(raw, session)
        assert not result.is_error, text_of(result)

    working = Lesson.objects.filter(memory=memory, tier="working")
    assert sorted(lesson.lesson_date.isoformat() for lesson in working) == ["2026-03-02", "2026-03-09", "2026-03-16"]
    candidate = PromotionCandidate.objects.get(memory=memory, status="pending")

    async def read(client):
        return await client.call_tool("get_memory", {})

    before = mcp_http.run(raw, read)
    assert "## Core Lessons" not in text_of(before)

    make_user("lead", role="approver")
    login("lead")
    page.goto("/promotions/")
    card = page.locator(f"#candidate-{candidate.pk}")
    assert "migrations" in card.inner_text()
    screenshot("inbox")
    card.locator("button[name=approve]").click()
    page.locator(f"#candidate-{candidate.pk} .core-lesson").wait_for()
    assert "Approved" in page.locator(f"#candidate-{candidate.pk}").inner_text()
    screenshot("approved")

    core = Lesson.objects.get(memory=memory, tier="core")
    after = mcp_http.run(raw, read)
    text = text_of(after)
    core_section = text.split("## Core Lessons", 1)[1].split("## Working Memory", 1)[0]
    assert f"- [{core.pk}] [{core.category}] {core.text}" in core_section
    assert after.structured_content["version"] > before.structured_content["version"]
    assert {"id": core.pk, "tier": "core"}.items() <= next(
        lesson for lesson in after.structured_content["lessons"] if lesson["id"] == core.pk
    ).items()
