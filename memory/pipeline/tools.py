"""The three tools of the pipeline and the code that enforces their rules.

Each handler is the product's code: whatever a model sends, ids it did not see are rejected,
duplicates are skipped, critical lessons are never dropped, and nothing but the tool's own effect
can happen (the pruner only proposes drops; it cannot merge, rewrite or add).
"""

import re
from datetime import datetime

from django.utils import timezone

from memory.engines.base import Tool, ToolResult
from memory.models import Relevance, content_hash
from memory.pipeline.transcripts import without_speaker

TIMESTAMP_RE = re.compile(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}$")
MAX_OBSERVATION_CHARS = 600
MAX_REFLECTION_CHARS = 600
RELEVANCES = [r.value for r in Relevance]

RECORD_OBSERVATIONS = Tool(
    name="record_observations",
    description=(
        "Store a batch of new observations from the conversation chunk. Call it as often as needed; "
        "stop calling it once the chunk is covered and reply with one short sentence."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "observations": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "timestamp": {
                            "type": "string",
                            "pattern": TIMESTAMP_RE.pattern,
                            "description": "When it happened, 'YYYY-MM-DD HH:MM'.",
                        },
                        "content": {
                            "type": "string",
                            "minLength": 1,
                            "description": "One line of plain prose; no tags, time or relevance.",
                        },
                        "relevance": {"type": "string", "enum": RELEVANCES},
                        "sourceEntryIds": {
                            "type": "array",
                            "items": {"type": "string", "minLength": 1},
                            "minItems": 1,
                            "description": "Ids from the '[Source entry id: …]' labels that support this observation.",
                        },
                    },
                    "required": ["timestamp", "content", "relevance", "sourceEntryIds"],
                },
            }
        },
        "required": ["observations"],
    },
)

RECORD_REFLECTIONS = Tool(
    name="record_reflections",
    description=(
        "Propose lasting reflections, each with the ids of the observations it captures. Repeat an "
        "existing reflection's exact text to add support to it."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "reflections": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "content": {"type": "string", "minLength": 1},
                        "supportingObservationIds": {"type": "array", "items": {"type": "string"}, "minItems": 1},
                    },
                    "required": ["content", "supportingObservationIds"],
                },
            }
        },
        "required": ["reflections"],
    },
)

DROP_OBSERVATIONS = Tool(
    name="drop_observations",
    description="Propose removing observations from working memory, by id. Critical ones are refused.",
    input_schema={
        "type": "object",
        "properties": {"ids": {"type": "array", "items": {"type": "string"}, "minItems": 1}},
        "required": ["ids"],
    },
)


def single_line(text, limit):
    text = re.sub(r"\s+", " ", str(text or "")).strip()
    if len(text) > limit:
        text = text[: limit - 1].rstrip() + "…"
    return text


def plural(n, word):
    return f"{n} {word}{'' if n == 1 else 's'}"


def _error(call, message):
    return ToolResult(call_id=call.id, content=message, is_error=True)


def _id_list(raw):
    if not isinstance(raw, list):
        return None
    out = []
    for item in raw:
        if isinstance(item, bool) or not isinstance(item, (str, int)):
            return None
        text = str(item).strip().strip("[]")
        if not text:
            return None
        out.append(text)
    return out


class ObserverTool:
    """record_observations: keeps valid, new observations; the receipt tells the model where it stands."""

    def __init__(self, *, allowed_ids, known_hashes, on_record):
        self.allowed = list(dict.fromkeys(allowed_ids))
        self.order = {sid: i for i, sid in enumerate(self.allowed)}
        self.seen = set(known_hashes)
        self.on_record = on_record  # (timestamp, content, relevance, source_ids) -> None
        self.total = 0
        self.added = self.duplicates = self.rejected = 0

    def normalize_ids(self, raw):
        ids = _id_list(raw)
        if not ids or any(i not in self.order for i in ids):
            return None
        return sorted(set(ids), key=self.order.__getitem__)

    def __call__(self, call):
        if call.name != RECORD_OBSERVATIONS.name:
            return _error(call, f"unknown tool {call.name!r}")
        items = call.arguments.get("observations")
        if not isinstance(items, list):
            return _error(call, "'observations' must be a list")
        added = duplicates = rejected = 0
        for item in items:
            if not isinstance(item, dict):
                rejected += 1
                continue
            ids = self.normalize_ids(item.get("sourceEntryIds"))
            content = single_line(without_speaker(str(item.get("content") or "")), MAX_OBSERVATION_CHARS)
            stamp = str(item.get("timestamp") or "")
            relevance = item.get("relevance")
            if ids is None or not content or relevance not in RELEVANCES or not TIMESTAMP_RE.match(stamp):
                rejected += 1
                continue
            digest = content_hash(content)
            if digest in self.seen:
                duplicates += 1
                continue
            try:
                when = timezone.make_aware(datetime.strptime(stamp, "%Y-%m-%d %H:%M"))
            except ValueError:
                rejected += 1
                continue
            self.seen.add(digest)
            self.on_record(when, content, relevance, ids)
            added += 1
        self.added += added
        self.duplicates += duplicates
        self.rejected += rejected
        self.total += added
        text = f"Stored {plural(added, 'new observation')}"
        text += f" ({plural(duplicates, 'duplicate')} skipped)." if duplicates else "."
        if rejected:
            text += (
                f" {plural(rejected, 'observation')} refused: source entry ids missing or not in this chunk, "
                "or a field was invalid."
            )
        text += (
            f" Stored so far in this run: {self.total}. If parts of the chunk are still uncovered, call "
            "again; otherwise stop calling the tool and reply with one short sentence."
        )
        return ToolResult(call_id=call.id, content=text)


class ReflectorTool:
    """record_reflections: new reflections, or more support for an existing one (same exact text)."""

    def __init__(self, *, observation_ids, existing, on_new, on_merge, min_support=1):
        self.observation_ids = {str(i) for i in observation_ids}
        self.existing = dict(existing)  # content_hash -> key of the existing reflection
        self.on_new = on_new  # (content, [lesson ids]) -> key
        self.on_merge = on_merge  # (key, [lesson ids]) -> number of ids actually added
        self.min_support = min_support
        self.added = self.merged = self.rejected = 0

    def __call__(self, call):
        if call.name != RECORD_REFLECTIONS.name:
            return _error(call, f"unknown tool {call.name!r}")
        items = call.arguments.get("reflections")
        if not isinstance(items, list):
            return _error(call, "'reflections' must be a list")
        added = merged = rejected = 0
        reasons = []
        for item in items:
            if not isinstance(item, dict):
                rejected += 1
                continue
            content = single_line(item.get("content"), MAX_REFLECTION_CHARS).lstrip("-• ").strip()
            ids = _id_list(item.get("supportingObservationIds"))
            if not content or not ids or any(i not in self.observation_ids for i in ids):
                rejected += 1
                reasons.append("supporting ids missing or not in the observation list")
                continue
            ids = sorted({int(i) for i in ids})
            digest = content_hash(content)
            if digest in self.existing:
                merged += 1 if self.on_merge(self.existing[digest], ids) else 0
                continue
            if len(ids) < self.min_support:
                rejected += 1
                reasons.append(f"this pass needs at least {self.min_support} supporting observations")
                continue
            self.existing[digest] = self.on_new(content, ids)
            added += 1
        self.added += added
        self.merged += merged
        self.rejected += rejected
        text = f"Recorded {plural(added, 'new reflection')}; strengthened {plural(merged, 'existing one')}."
        if rejected:
            text += f" {plural(rejected, 'proposal')} refused ({'; '.join(sorted(set(reasons)))})."
        text += " Continue while something lasting is still uncaptured; otherwise stop and reply briefly."
        return ToolResult(call_id=call.id, content=text)


class PrunerTool:
    """drop_observations: collects proposed drops; critical and protected lessons are refused."""

    def __init__(self, *, pool, cost):
        self.pool = {str(lesson.pk): lesson for lesson in pool}
        self.cost = cost  # lesson -> tokens
        self.dropped = []  # lesson ids, in order
        self.refused = 0

    def remaining_tokens(self):
        dropped = set(self.dropped)
        return sum(self.cost(lesson) for key, lesson in self.pool.items() if lesson.pk not in dropped)

    def __call__(self, call):
        if call.name != DROP_OBSERVATIONS.name:
            return _error(call, f"unknown tool {call.name!r}")
        ids = _id_list(call.arguments.get("ids"))
        if not ids:
            return _error(call, "'ids' must be a non-empty list of observation ids")
        now_dropped, refused = [], []
        for key in ids:
            lesson = self.pool.get(key)
            if lesson is None:
                refused.append(f"{key}: not in the pool")
            elif lesson.pk in self.dropped or lesson.pk in now_dropped:
                continue
            elif lesson.relevance == Relevance.CRITICAL:
                refused.append(f"{key}: critical observations are never dropped")
            elif lesson.protected:
                refused.append(f"{key}: protected")
            else:
                now_dropped.append(lesson.pk)
        self.dropped.extend(now_dropped)
        self.refused += len(refused)
        text = f"Dropped {plural(len(now_dropped), 'observation')}"
        text += f" ({', '.join(str(i) for i in now_dropped)})." if now_dropped else "."
        if refused:
            text += " Refused: " + "; ".join(refused) + "."
        text += (
            f" {len(self.pool) - len(self.dropped)} remain, about {self.remaining_tokens()} tokens. "
            "Stop and reply briefly when no further drop is sound."
        )
        return ToolResult(call_id=call.id, content=text)
