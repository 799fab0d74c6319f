"""What a receiver gets: the Standard Webhooks JSON body, or a Slack incoming-webhook message.

Both are built from the event's `data` (ids, names, links, counts). Lesson text is added only for
endpoints that ask for it. In Slack text every `&`, `<` and `>` is escaped, so text cannot open a
link, a mention (`<!channel>`, `<@U123>`) or any other markup.
"""

import json
from datetime import UTC

SUMMARIES = {
    "review.waiting": "{count} new {what} waiting for review in {memory}",
    "review.decided": "{decision} by {by} in {memory}: {count} {what}",
    "review.overdue": "{count} review items in {team} have waited more than {days} days",
    "sync.failed": "Night Watch folder {folder} could not be synced: {error}",
    "webhook.test": "Test event from Night Watch Memory",
}


def body_for(event, endpoint):
    data = dict(event.data)
    if endpoint.include_lesson_text and event.lesson_texts:
        data["items"] = [
            {**item, "text": event.lesson_texts.get(str(item.get("key") or item.get("id")), "")}
            for item in data.get("items", [])
        ]
    if endpoint.format == endpoint.Format.SLACK:
        return slack_message(event, data)
    return {
        "id": event.uid,
        "type": event.type,
        "timestamp": event.created_at.astimezone(UTC).isoformat().replace("+00:00", "Z"),
        "data": data,
    }


def encode(body):
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False, sort_keys=True)


def slack_escape(text):
    return str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def summary(event_type, data):
    items = data.get("items", [])
    kinds = sorted({item.get("kind", "item") for item in items})
    fields = {
        "count": data.get("count", len(items)),
        "what": ", ".join(kinds) or "items",
        "memory": data.get("memory", {}).get("name", "a memory") if data.get("memory") else "a memory",
        "decision": str(data.get("decision", "decided")).capitalize(),
        "by": data.get("by", "someone"),
        "team": (data.get("team") or {}).get("name", "a team"),
        "days": data.get("days", ""),
        "folder": data.get("folder", ""),
        "error": data.get("error", ""),
    }
    template = SUMMARIES.get(event_type, "{count} {what}")
    return template.format(**fields)


def slack_message(event, data):
    headline = slack_escape(summary(event.type, data))
    link = data.get("url", "")
    lines = []
    for item in data.get("items", [])[:10]:
        label = slack_escape(item.get("title") or f"{item.get('kind', 'item')} {item.get('id', '')}")
        text = item.get("text")
        line = f"• <{item['url']}|{label}>" if item.get("url") else f"• {label}"
        if text:
            line += f": {slack_escape(text)[:300]}"
        lines.append(line)
    more = len(data.get("items", [])) - 10
    if more > 0:
        lines.append(f"… and {more} more")
    blocks = [{"type": "section", "text": {"type": "mrkdwn", "text": f"*{headline}*"}}]
    if lines:
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": "\n".join(lines)[:2900]}})
    context = [f"`{event.type}`", f"event {event.uid}"]
    if link:
        context.append(f"<{link}|Open in Night Watch Memory>")
    blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": " · ".join(context)}]})
    return {"text": headline, "blocks": blocks}
