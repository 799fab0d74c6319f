"""Transcripts the observer reads: entries [{id, role, at, text}], chunks shown to the model, pasted text."""

import re

# "User: …", "[Assistant]: …", "assistant @ 10:02: …": how a speaker is named at the start of a line.
_SPEAKER = re.compile(r"^\s*\[?(?:user|assistant|agent|tool|system|human|ai)\]?(?:\s*@\s*[0-9: -]+)?\s*:\s*", re.I)


def without_speaker(text):
    """An observation is about the work, not a quote: drop a leading "User:" or "Assistant:"."""
    text = text or ""
    stripped = _SPEAKER.sub("", text, count=1).strip()
    if stripped == text.strip() or not stripped:
        return text
    return stripped[:1].upper() + stripped[1:]


def transcript_entries(raw):
    """Clean transcript entries [{id, role, at, text}]; entries without id or text are ignored."""
    entries = []
    for item in raw or []:
        if not isinstance(item, dict):
            continue
        entry_id = str(item.get("id") or "").strip()
        text = str(item.get("text") or "").strip()
        if entry_id and text:
            entries.append(
                {
                    "id": entry_id,
                    "role": str(item.get("role") or "user").strip() or "user",
                    "at": str(item.get("at") or "").strip(),
                    "text": text,
                }
            )
    return entries


def render_chunk(entries):
    blocks = []
    for entry in entries:
        at = f" @ {entry['at']}" if entry["at"] else ""
        blocks.append(f"[Source entry id: {entry['id']}]\n[{entry['role'].capitalize()}{at}]: {entry['text']}")
    return "\n\n".join(blocks)


LINE_RE = re.compile(r"^\[(?P<id>[^\]]+)\]\s+(?P<role>[A-Za-z ]+?)(?:\s+@\s+(?P<at>[0-9: -]+))?:\s*(?P<text>.+)$")


def parse_pasted_transcript(text):
    """A pasted transcript, one entry per line: "[id] role @ YYYY-MM-DD HH:MM: text" or "role: text"."""
    entries = []
    for n, line in enumerate((text or "").splitlines(), start=1):
        line = line.strip()
        if not line:
            continue
        match = LINE_RE.match(line)
        if match:
            entries.append(
                {
                    "id": match["id"].strip(),
                    "role": match["role"].strip().lower(),
                    "at": (match["at"] or "").strip(),
                    "text": match["text"].strip(),
                }
            )
            continue
        role, sep, rest = line.partition(":")
        if sep and role.strip().lower() in ("user", "assistant", "tool", "system"):
            entries.append({"id": f"e{n}", "role": role.strip().lower(), "at": "", "text": rest.strip()})
        elif entries:
            entries[-1]["text"] += " " + line
        else:
            entries.append({"id": f"e{n}", "role": "user", "at": "", "text": line})
    return entries
