"""Request and response shapes of the agent API (they are the OpenAPI schema too).

Every constraint a request must meet is written in the schema (lengths, patterns, the fields each
tool takes), and the validators below check exactly that, so a request the schema allows is
accepted and one it refuses gets a 422 naming the field.
"""

import re
from datetime import date, datetime
from typing import Annotated, Literal

from django.conf import settings
from django.core.exceptions import ValidationError as DjangoValidationError
from ninja import Field, Schema
from ninja.schema import DjangoGetter
from pydantic import AfterValidator, BeforeValidator, Discriminator, Tag, TypeAdapter, field_validator, model_validator

from memory.history.lessons import EXPIRES_WHEN_MAX_CHARS
from memory.refs import MAX_REF_PATH, parse_ref
from memory.textcheck import (
    MAX_ID,  # noqa: F401 -- re-exported: the API views bound path ids with s.MAX_ID
    MULTI_LINE_PATTERN,
    NON_BLANK_LINE_PATTERN,
    NON_BLANK_TEXT_PATTERN,
    SINGLE_LINE_PATTERN,
    text_problem,
)

TIER = Literal["core", "working"]
CATEGORY = Literal["PATTERN", "DECISION", "ARCHITECTURE", "OBSERVATION", "HYPOTHESIS", "TODO"]
AGENT_RELEVANCE = Literal["low", "medium", "high"]

MAX_SUMMARY_CHARS = 20_000
MAX_FILES = 200
MAX_TRANSCRIPT_ENTRIES = 500
MAX_ERROR_CHARS = 500
ERROR_JOINER = " — error: "
# Ids are PostgreSQL bigints (MAX_ID); offsets past any real memory only give an empty page.
MAX_OFFSET = 1_000_000_000

# A code reference as the API takes it: a path of segments (none of them "..") and optional lines
# 1–9,999,999, e.g. src/app.py#L10-L20 (no comma: stored refs are a comma-separated list). A range given
# backwards is read as the same lines.
_PATH_CHAR = "[^\\s#(),`/\\x00-\\x1f\\x7f-\\x9f\\u2028\\u2029]"
_FIRST_CHAR = "[^\\s#(),`/.\\x00-\\x1f\\x7f-\\x9f\\u2028\\u2029]"
_SEGMENT = f"(?:{_FIRST_CHAR}{_PATH_CHAR}*|\\.(?:{_FIRST_CHAR}{_PATH_CHAR}*)?|\\.\\.{_PATH_CHAR}+)"
_LINE = "[1-9][0-9]{0,6}"
_PATH = f"/?{_SEGMENT}(?:/{_SEGMENT})*/?"
PATH_PATTERN = f"^{_PATH}$"
REF_PATTERN = f"^{_PATH}(?:#L{_LINE}(?:-L?{_LINE})?)?$"
_REF_RE = re.compile(REF_PATTERN)
_PATH_RE = re.compile(PATH_PATTERN)
REF_DESCRIPTION = "A file or folder, optionally with lines: src/app.py#L10-L20 (lines 1–9,999,999; no '..')."

_PATTERNS = {
    SINGLE_LINE_PATTERN: {"multiline": False, "blank_ok": True},
    NON_BLANK_LINE_PATTERN: {"multiline": False, "blank_ok": False},
    MULTI_LINE_PATTERN: {"multiline": True, "blank_ok": True},
    NON_BLANK_TEXT_PATTERN: {"multiline": True, "blank_ok": False},
}
MAX_WORDS_CHARS = 200


def check(value, pattern):
    """The validator side of a text pattern: the same rule, with a readable message."""
    rule = _PATTERNS[pattern]
    problem = text_problem(value, multiline=rule["multiline"])
    if problem:
        raise ValueError(problem)
    if not rule["blank_ok"] and not value.strip():
        raise ValueError("must not be blank")
    return value


def check_ref(value):
    if len(value) > MAX_REF_PATH or not _REF_RE.fullmatch(value):
        problem = text_problem(value)
        raise ValueError(
            f"{value[:100]!r} {problem}"
            if problem
            else f"{value[:100]!r} is not a code reference like src/app.py#L10-L20 (no '..', no spaces)"
        )
    try:
        return parse_ref(value, backwards_ok=True).as_text()
    except DjangoValidationError as exc:
        raise ValueError(" ".join(exc.messages)) from None


def check_path(value):
    if len(value) > MAX_REF_PATH or not _PATH_RE.fullmatch(value):
        raise ValueError("must be a file or folder inside the project, like src/auth/ (no '..', no spaces)")
    return value


def Text(pattern, *, max_length, min_length=None, description=None, strip=False):
    """A string whose schema carries the text rule and whose validator checks exactly that rule."""

    def valid(value):
        value = check(value, pattern)
        return value.strip() if strip else value

    return Annotated[
        str,
        Field(
            min_length=min_length,
            max_length=max_length,
            description=description,
            json_schema_extra={"pattern": pattern},
        ),
        AfterValidator(valid),
    ]


Ref = Annotated[
    str,
    Field(
        min_length=1, max_length=MAX_REF_PATH, description=REF_DESCRIPTION, json_schema_extra={"pattern": REF_PATTERN}
    ),
    AfterValidator(check_ref),
]


_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def check_date(value):
    """A day as the schema's `date` format writes it (YYYY-MM-DD), or None: no numbers, no times."""
    if value is None or (isinstance(value, date) and not isinstance(value, datetime)):
        return value
    if not isinstance(value, str) or not _ISO_DATE.match(value):
        raise ValueError("must be a date written YYYY-MM-DD, e.g. 2026-03-01")
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise ValueError("is not a real date") from None


ExpiresOn = Annotated[
    date | None,
    Field(
        description="The first day the lesson no longer holds (YYYY-MM-DD): from that day on it is left out "
        "of compiled memory. A day already reached takes it out at once."
    ),
    BeforeValidator(check_date),
]
ExpiresWhen = (
    Text(
        SINGLE_LINE_PATTERN,
        max_length=EXPIRES_WHEN_MAX_CHARS,
        description="The event the lesson holds until, in words ('the 2.3 rollout reaches 100 %', "
        "'upstream fixes #1234'): a later lesson saying it happened proposes retiring this one.",
    )
    | None
)


def field_errors(errors):
    """{"lessons.0.text": ["..."]} from pydantic's error list, without the request-part prefixes."""
    fields = {}
    for err in errors:
        loc = list(err.get("loc", ()))
        if loc and loc[0] in ("body", "query", "path"):  # where the value was sent, not its name
            loc = loc[1:]
        if loc and loc[0] in ("payload", "filters"):
            loc = loc[1:]
        # A lesson is one of the tools' shapes: its errors are named lessons.N.field, without the tool's tag.
        loc = [str(part) for part in loc if part not in TOOLS and part != _BY_CATEGORY]
        if err.get("type") in ("union_tag_invalid", "union_tag_not_found"):
            loc.append("tool")
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
        "unanchored",
        description="What the last check of the project's checkout found: moved, changed and gone "
        "refs no longer point at the code the lesson was written about (compiled memory marks them stale).",
    )
    verified_commit: str | None = Field(None, description="The last commit the ref was verified at.")
    proposed: str | None = Field(None, description="For a moved ref: where its lines are now (a person decides).")
    note: str = ""
    permalink: str | None = Field(
        None, description="The ref's lines in the repository at the verified commit (in recall)."
    )


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
    expires_on: date | None = None
    expires_when: str = ""
    refs: list[RefOut]


class ContextLesson(Schema):
    id: int
    tier: str
    category: str
    text: str
    refs: list[str]
    stale_refs: list[str] = Field(
        default_factory=list,
        description="Those of `refs` that no longer point at "
        "the code the lesson was written about (marked `stale` in the text).",
    )
    expires_on: date | None = Field(None, description="A temporary lesson's last day is the day before this one.")
    expires_when: str = Field("", description="A temporary lesson holds until this happens.")


class ContextOut(Schema):
    persona: str
    project: str
    version: int
    text: str
    lessons: list[ContextLesson]
    cut_lesson_ids: list[int]
    usage: str = ""
    text_with_ids: str = ""


_RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:[Zz]|[+-]\d{2}:\d{2})$")


class TranscriptEntry(Schema):
    id: Text(SINGLE_LINE_PATTERN, max_length=100)
    role: Text(SINGLE_LINE_PATTERN, max_length=50) = ""
    at: datetime | None = Field(None, description="RFC 3339 with an offset: 2026-03-02T09:15:00Z")
    text: Text(MULTI_LINE_PATTERN, max_length=20_000)

    @field_validator("at", mode="before")
    @classmethod
    def rfc3339(cls, value):
        # Only what the schema's date-time format allows: no numbers (0 is not a time), no naive times.
        if value is None:
            return value
        if not isinstance(value, str) or not _RFC3339.match(value):
            raise ValueError("must be an RFC 3339 date-time with an offset, e.g. 2026-03-02T09:15:00Z")
        try:
            return datetime.fromisoformat(value.upper().replace("Z", "+00:00"))
        except ValueError:
            raise ValueError("is not a real date and time") from None


class InteractionIn(Schema):
    trigger_type: Text(
        NON_BLANK_LINE_PATTERN,
        min_length=1,
        max_length=50,
        strip=True,
        description="What started it: pr_review, deliberation …",
    )
    outcome: Text(SINGLE_LINE_PATTERN, max_length=200) = ""
    summary: Text(NON_BLANK_TEXT_PATTERN, min_length=1, max_length=MAX_SUMMARY_CHARS, strip=True)
    files_changed: list[Ref] = Field(
        default_factory=list, max_length=MAX_FILES, description="Paths, optionally with lines: src/app.py#L10-L20"
    )
    transcript: list[TranscriptEntry] = Field(default_factory=list, max_length=MAX_TRANSCRIPT_ENTRIES)


class InteractionOut(Schema):
    id: int
    status: str
    error: str = ""
    lesson_ids: list[int] = Field(default_factory=list)
    created_at: datetime
    reflected_at: datetime | None = None


_TEXT_MAX = settings.LESSON_MAX_CHARS
_ERROR_TEXT_MAX = _TEXT_MAX - MAX_ERROR_CHARS - len(ERROR_JOINER)


class _LessonBase(Schema):
    text: Text(
        NON_BLANK_LINE_PATTERN,
        min_length=1,
        max_length=_TEXT_MAX,
        description=f"One line, at most {_TEXT_MAX} characters (LESSON_MAX_CHARS)",
    )
    refs: list[Ref] = Field(default_factory=list, max_length=20)
    relevance: AGENT_RELEVANCE | None = None
    expires_on: ExpiresOn = None
    expires_when: ExpiresWhen = None


class SaveFact(_LessonBase):
    tool: Literal["save_fact"]
    category: Literal["DECISION", "ARCHITECTURE", "PATTERN"] | None = None


class LogLearning(_LessonBase):
    tool: Literal["log_learning"]
    category: Literal["OBSERVATION", "PATTERN"] | None = None


class LogError(_LessonBase):
    tool: Literal["log_error"]
    # Room is left for the error, which is kept in the lesson's text.
    text: Text(
        NON_BLANK_LINE_PATTERN,
        min_length=1,
        max_length=_ERROR_TEXT_MAX,
        description=f"One line, at most {_ERROR_TEXT_MAX} characters (the error is appended)",
    )
    category: Literal["OBSERVATION"] | None = None
    error: Text(
        NON_BLANK_TEXT_PATTERN,
        min_length=1,
        max_length=MAX_ERROR_CHARS,
        description="The error message that was seen (kept on one line in the lesson)",
    )


class DailyLog(_LessonBase):
    tool: Literal["daily_log"]
    category: Literal["OBSERVATION"] | None = None


class CategoryLesson(_LessonBase):
    """A lesson given by its category alone: no tool, so no tool's mapping applies (relevance medium)."""

    tool: None = None
    category: CATEGORY


TOOLS = ("save_fact", "log_learning", "log_error", "daily_log")
# The shape a lesson takes: its tool's, or the category-only one when it names no tool.
_BY_CATEGORY = "by_category"


def _lesson_shape(value):
    tool = value.get("tool") if isinstance(value, dict) else getattr(value, "tool", None)
    return _BY_CATEGORY if tool is None else tool


LessonItem = Annotated[
    Annotated[SaveFact, Tag("save_fact")]
    | Annotated[LogLearning, Tag("log_learning")]
    | Annotated[LogError, Tag("log_error")]
    | Annotated[DailyLog, Tag("daily_log")]
    | Annotated[CategoryLesson, Tag(_BY_CATEGORY)],
    Discriminator(_lesson_shape),
]
_LESSON_ITEM = TypeAdapter(LessonItem)


def LessonIn(**fields):
    """One tool call as its own shape (SaveFact, LogError…); pydantic's ValidationError when it is not one."""
    return _LESSON_ITEM.validate_python(fields)


class LessonsIn(Schema):
    lessons: list[LessonItem] = Field(min_length=1, max_length=20)


class AppendedLesson(Schema):
    id: int
    status: Literal["created", "confirmed"]
    tier: str
    category: str
    text: str
    expires_on: date | None = None
    expires_when: str = ""


class LessonsAppendedOut(Schema):
    lessons: list[AppendedLesson]
    version: int


class LessonPage(Schema):
    count: int
    limit: int
    offset: int
    next_offset: int | None
    items: list[LessonOut]


class ExpiryIn(Schema):
    """A lesson's expiry as a whole: what is left out (or null) is cleared."""

    expires_on: ExpiresOn = None
    expires_when: ExpiresWhen = None

    @model_validator(mode="before")
    @classmethod
    def an_object(cls, value):
        # Every field may be left out, so nothing else would refuse a body that is no object.
        raw = value._obj if isinstance(value, DjangoGetter) else value  # as the body was parsed
        if not isinstance(raw, dict | Schema):
            raise ValueError("the body must be a JSON object: {} clears the expiry")
        return value


class ExpirySetOut(LessonOut):
    version: int = Field(description="The memory's version after the change.")


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
