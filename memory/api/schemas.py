"""Request and response shapes of the agent API (they are the OpenAPI schema too)."""

from datetime import date, datetime
from typing import Literal

from ninja import Field, Schema
from pydantic import field_validator

from memory.refs import parse_ref

TIER = Literal["core", "working"]
CATEGORY = Literal["PATTERN", "DECISION", "ARCHITECTURE", "OBSERVATION", "HYPOTHESIS", "TODO"]
TOOL = Literal["save_fact", "log_learning", "log_error", "daily_log"]
AGENT_RELEVANCE = Literal["low", "medium", "high"]

MAX_SUMMARY_CHARS = 20_000
MAX_FILES = 200
MAX_TRANSCRIPT_ENTRIES = 500
MAX_WORDS_CHARS = 200


def _check_refs(values):
    from django.core.exceptions import ValidationError

    cleaned = []
    for value in values:
        try:
            cleaned.append(parse_ref(value).as_text())
        except ValidationError as exc:
            raise ValueError(" ".join(exc.messages)) from None
    return cleaned


def field_errors(errors):
    """{"lessons.0.text": ["..."]} from pydantic's error list, without the request-part prefixes."""
    fields = {}
    for err in errors:
        loc = [str(part) for part in err.get("loc", ()) if part not in ("body", "query", "path", "payload", "filters")]
        fields.setdefault(".".join(loc) or "body", []).append(err.get("msg", "invalid"))
    return fields


class ErrorOut(Schema):
    detail: str
    fields: dict[str, list[str]] = Field(default_factory=dict)


class RefOut(Schema):
    path: str
    start_line: int | None = None
    end_line: int | None = None
    text: str
    status: Literal["unanchored", "valid", "moved", "changed", "gone"] = Field(
        "unanchored", description="What the last check of the project's checkout found: moved, changed and gone "
        "refs no longer point at the code the lesson was written about (compiled memory marks them stale).")
    verified_commit: str | None = Field(None, description="The last commit the ref was verified at.")
    proposed: str | None = Field(None, description="For a moved ref: where its lines are now (a person decides).")
    note: str = ""
    permalink: str | None = Field(None, description="The ref's lines in the repository at the verified commit "
                                  "(in recall).")


class LessonOut(Schema):
    id: int
    tier: str
    category: str
    text: str
    relevance: str
    protected: bool
    status: str
    vague: bool
    lesson_date: date
    refs: list[RefOut]


class ContextLesson(Schema):
    id: int
    tier: str
    category: str
    text: str
    refs: list[str]
    stale_refs: list[str] = Field(default_factory=list, description="Those of `refs` that no longer point at "
                                  "the code the lesson was written about (marked `stale` in the text).")


class ContextOut(Schema):
    persona: str
    project: str
    version: int
    text: str
    lessons: list[ContextLesson]
    cut_lesson_ids: list[int]
    usage: str = ""
    text_with_ids: str = ""


class TranscriptEntry(Schema):
    id: str = Field(max_length=100)
    role: str = Field(default="", max_length=50)
    at: datetime | None = None
    text: str = Field(max_length=20_000)


class InteractionIn(Schema):
    trigger_type: str = Field(min_length=1, max_length=50, description="What started it: pr_review, deliberation …")
    outcome: str = Field(default="", max_length=200)
    summary: str = Field(min_length=1, max_length=MAX_SUMMARY_CHARS)
    files_changed: list[str] = Field(default_factory=list, max_length=MAX_FILES,
                                     description="Paths, optionally with lines: src/app.py#L10-L20")
    transcript: list[TranscriptEntry] = Field(default_factory=list, max_length=MAX_TRANSCRIPT_ENTRIES)

    @field_validator("trigger_type", "summary")
    @classmethod
    def not_blank(cls, value):
        if not value.strip():
            raise ValueError("must not be blank")
        return value.strip()

    @field_validator("files_changed")
    @classmethod
    def valid_paths(cls, values):
        return _check_refs(values)


class InteractionOut(Schema):
    id: int
    status: str
    error: str = ""
    lesson_ids: list[int] = Field(default_factory=list)
    created_at: datetime
    reflected_at: datetime | None = None


class LessonIn(Schema):
    tool: TOOL | None = Field(
        default=None,
        description="save_fact, log_learning, log_error or daily_log (see the API docs for the mapping); "
        "optional when a category is given",
    )
    text: str = Field(min_length=1, max_length=2000)
    category: CATEGORY | None = None
    refs: list[str] = Field(default_factory=list, max_length=20)
    relevance: AGENT_RELEVANCE | None = None
    error: str = Field(default="", max_length=1000, description="log_error: the error message that was seen")

    @field_validator("text")
    @classmethod
    def single_line(cls, value):
        if not value.strip():
            raise ValueError("must not be blank")
        return value

    @field_validator("refs")
    @classmethod
    def valid_refs(cls, values):
        return _check_refs(values)


class LessonsIn(Schema):
    lessons: list[LessonIn] = Field(min_length=1, max_length=20)


class AppendedLesson(Schema):
    id: int
    status: Literal["created", "confirmed"]
    tier: str
    category: str
    text: str


class LessonsAppendedOut(Schema):
    lessons: list[AppendedLesson]
    version: int


class LessonPage(Schema):
    count: int
    limit: int
    offset: int
    next_offset: int | None
    items: list[LessonOut]


class ChangeOut(Schema):
    id: int
    action: str
    at: datetime
    actor: str
    batch_id: int
    batch_kind: str
    reason: str
    before: dict | None
    after: dict | None
    reverted: bool


class LinkedLesson(Schema):
    id: int
    tier: str
    category: str
    text: str
    status: str


class InteractionRef(Schema):
    id: int
    trigger_type: str
    outcome: str
    summary: str
    created_at: datetime


class RecallOut(LessonOut):
    persona: str
    project: str
    interaction: InteractionRef | None
    derived_from: list[LinkedLesson]
    superseded_by: int | None
    source_entry_ids: list
    source_entries: list[dict] = []
    observed_at: datetime | None
    confirmations: list[date]
    history: list[ChangeOut]


class HealthOut(Schema):
    status: str
