"""A Slack endpoint gets what an incoming webhook accepts, with text that cannot mention or link."""

import pytest

from memory.models import WebhookEndpoint, WebhookEvent
from memory.webhooks.payloads import body_for

pytestmark = pytest.mark.django_db

KNOWN_BLOCKS = {"section", "context", "divider", "header", "actions", "image", "rich_text"}


def _event(**data):
    return WebhookEvent.objects.create(type="review.waiting", data=data, lesson_texts={"7": data.pop("_text", "")})


def _check_shape(message):
    assert isinstance(message["text"], str) and message["text"]
    for block in message["blocks"]:
        assert block["type"] in KNOWN_BLOCKS
        if block["type"] == "section":
            assert block["text"]["type"] in ("mrkdwn", "plain_text") and len(block["text"]["text"]) <= 3000
        if block["type"] == "context":
            assert all(e["type"] in ("mrkdwn", "plain_text", "image") for e in block["elements"])


def test_a_slack_message_has_text_and_known_blocks():
    endpoint = WebhookEndpoint(url="https://hooks.slack.com/services/T/B/X", format="slack")
    event = _event(
        count=1,
        memory={"name": "Maya × payments"},
        items=[{"kind": "promotion", "id": 7, "url": "https://memory.example.com/promotions/7/"}],
        url="https://memory.example.com/",
    )
    message = body_for(event, endpoint)
    _check_shape(message)
    assert "1 new promotion waiting for review in Maya × payments" in message["text"]
    assert "<https://memory.example.com/promotions/7/|promotion 7>" in message["blocks"][1]["text"]["text"]


def test_lesson_text_cannot_mention_a_channel_link_or_inject_markup():
    hostile = "<!channel> <@U024BE7LH> <https://evil.example|click> & <b>bold</b>"
    endpoint = WebhookEndpoint(url="https://hooks.slack.com/services/T/B/X", format="slack", include_lesson_text=True)
    event = _event(
        count=1,
        memory={"name": "<!here> × payments"},
        items=[{"kind": "promotion", "id": 7, "url": "https://memory.example.com/promotions/7/"}],
        _text=hostile,
    )
    message = body_for(event, endpoint)
    _check_shape(message)
    everything = str(message)
    for raw in ("<!channel>", "<!here>", "<@U024BE7LH>", "<https://evil.example", "<b>"):
        assert raw not in everything
    assert "&lt;!channel&gt;" in message["blocks"][1]["text"]["text"]
    assert "&amp;" in message["blocks"][1]["text"]["text"]
