"""The MCP server: an agent's memory as tools and resources, on the agent API's scope rules.

Everything here calls the agent API's selectors and services (`memory.api`), so a tool call
and the matching HTTP request check the same scope, validate the same way and write the same
history. What is never exposed: approving, applying, reverting, editing prompts.

Errors: a tool the model called wrongly (another persona or project, an unknown lesson,
invalid text) answers with `isError` and a message saying what to change; nothing is written.
A revoked or unknown token is refused before any tool runs: HTTP 401 on streamable HTTP, a
protocol error on stdio.
"""

import contextvars
import functools
import json
from typing import Annotated, Literal
from urllib.parse import quote

import anyio.to_thread
from django.core.exceptions import PermissionDenied
from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.serializers.json import DjangoJSONEncoder
from django.db import close_old_connections
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS, INVALID_REQUEST, CallToolResult, Resource, TextContent, ToolAnnotations
from pydantic import Field
from pydantic import ValidationError as PydanticValidationError

from memory.api import schemas as s
from memory.api.auth import agent_token_for_bearer
from memory.api.selectors import (
    NotFound,
    OutOfScope,
    appended_out,
    context_payload,
    expiry_set_out,
    interaction_out,
    lesson_for_write,
    lesson_line,
    lesson_page,
    read_scope,
    readable_projects,
    recall_payload,
    text_with_ids,
    write_scope,
)
from memory.api.services import (
    LessonNotLive,
    agent_interaction_submit,
    agent_lesson_set_expiry,
    agent_lessons_write,
)
from memory.refs.models import NEEDS_REVIEW

SERVER_NAME = "night-watch-memory"
RESOURCE_TEMPLATE = "memory://{persona}/{project}"
# Where the HTTP transport leaves the authenticated token for the tools (see memory.mcp.http).
SCOPE_KEY = "nwm.agent_token"

INSTRUCTIONS = """\
Night Watch Memory keeps what this agent has learned about a project: core lessons (approved by
people, permanent) and working memory (recent, compactable). Call get_memory at the start of a
task and follow it. Record what you learn as you go: save_fact for a lasting decision or fact,
log_learning for an insight, log_error for an error and its fix, daily_log for progress notes;
everything you write lands in working memory, and only people promote it to core. A lesson that
holds only for a while takes expires_on (a day) or expires_when (an event); set_expiry dates or
undates a working lesson later. recall shows where a lesson came from; find_lessons lists the
lessons about a file or folder."""

MCP_USAGE = """How to use this memory: core lessons are permanent and approved; working memory holds
recent observations, newest last, and the newest wins when two disagree. Do not redo work recorded
as completed unless asked to. Ids in brackets can be passed to the recall tool for a lesson's
sources when a decision depends on the exact evidence."""

# The agent behind the current MCP request, bound by `MemoryServer._bind_agent` for the call.
_current_agent = contextvars.ContextVar("nwm_mcp_agent", default=None)

# Requests that read or write memory; everything else (initialize, ping, tools/list) needs no token.
GUARDED_METHODS = {"tools/call", "resources/list", "resources/read"}


def db_work(func):
    """Run ORM code in a worker thread the way Django runs a request: stale connections closed around it."""

    @functools.wraps(func)
    def run(*args, **kwargs):
        close_old_connections()
        try:
            return func(*args, **kwargs)
        finally:
            close_old_connections()

    return run


def _jsonable(data):
    return json.loads(json.dumps(data, cls=DjangoJSONEncoder))


def _result(text, data):
    """A tool answer: readable text for the model, the same facts as structured content for programs."""
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=_jsonable(data))


def _agent():
    token = _current_agent.get()
    if token is None:  # only reachable if a guarded method slipped past the middleware
        raise MCPError(code=INVALID_REQUEST, message="no agent token for this request")
    return token


def _target(token, persona, project):
    """The persona name and project slug a call means: the token's own unless named."""
    persona = persona or token.persona_name
    if not project:
        if not token.project_slug:
            raise ToolError("name the project (its slug): this token may reach every project of its persona")
        project = token.project_slug
    return persona, project


def _tool_errors(func):
    """Scope and validation failures become tool errors the model can read and act on."""

    @functools.wraps(func)
    def run(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        except (OutOfScope, NotFound, PermissionDenied, LessonNotLive) as exc:
            raise ToolError(str(exc)) from None
        except PydanticValidationError as exc:
            fields = s.field_errors(exc.errors())
            raise ToolError(_invalid(fields)) from None
        except DjangoValidationError as exc:
            fields = exc.message_dict if hasattr(exc, "error_dict") else {"input": exc.messages}
            raise ToolError(_invalid(fields)) from None

    return run


def _invalid(fields):
    details = "; ".join(f"{name}: {' '.join(messages)}" for name, messages in fields.items())
    return f"invalid input, nothing was written — {details}"


# --- argument types the model sees in the tool schemas -----------------------------------------

PersonaArg = Annotated[
    str | None,
    Field(
        description="Your persona's name. Leave it out: it defaults to the token's persona, the only one it may reach."
    ),
]
ProjectArg = Annotated[
    str | None,
    Field(description="The project's slug, e.g. 'night-watch'. Leave it out when the token is limited to one project."),
]
Text = Annotated[
    str, Field(description="One line, at most 2000 characters: the lesson itself, specific and self-contained.")
]
Refs = Annotated[
    list[str] | None,
    Field(
        description="Code the lesson is about: paths inside the project, optionally with lines, "
        "e.g. 'src/auth/middleware.py#L23-L30' or a folder 'src/auth/'. At most 20."
    ),
]
ExpiresOnArg = Annotated[
    str | None,
    Field(
        description="Only for a lesson that holds for a while: the first day it no longer holds, YYYY-MM-DD "
        "(from that day on it leaves your memory)."
    ),
]
ExpiresWhenArg = Annotated[
    str | None,
    Field(
        description="Only for a lesson that holds until something happens: that event, in words, e.g. "
        "'the 2.3 rollout reaches 100 %' or 'upstream fixes #1234'. A later lesson saying it happened "
        "asks a person to retire this one."
    ),
]
RelevanceArg = Annotated[
    s.AGENT_RELEVANCE | None,
    Field(description="low, medium (default) or high: how much this should matter when memory is trimmed."),
]


class MemoryServer(MCPServer):
    """The MCP server of one deployment (HTTP) or of one agent process (stdio, with `stdio_token`)."""

    def __init__(self, *, stdio_token=None):
        super().__init__(
            name=SERVER_NAME,
            title="Night Watch Memory",
            instructions=INSTRUCTIONS,
            version="1",
            middleware=[self._bind_agent],
        )
        self._stdio_token = stdio_token
        _register(self)

    async def _bind_agent(self, ctx, call_next):
        """Find the agent behind a request that touches memory and bind it for the handler."""
        if ctx.method not in GUARDED_METHODS:
            return await call_next(ctx)
        scope = getattr(ctx.request, "scope", None)
        if scope is not None:
            token = scope.get(SCOPE_KEY)  # authenticated per HTTP request by memory.mcp.http
        else:
            # A stdio server may run for days: its token is checked again on every call, so
            # revoking it takes effect at once.
            token = await anyio.to_thread.run_sync(db_work(agent_token_for_bearer), self._stdio_token)
        if token is None:
            raise MCPError(
                code=INVALID_REQUEST,
                message="this agent token is revoked or unknown; ask a person for a new one "
                "(manage.py create_agent_token)",
            )
        bound = _current_agent.set(token)
        try:
            return await call_next(ctx)
        finally:
            _current_agent.reset(bound)

    async def list_resources(self):
        """One resource per project the token may read: its compiled memory."""
        token = _agent()
        projects = await anyio.to_thread.run_sync(db_work(lambda: list(readable_projects(token))))
        return [
            Resource(
                uri=_resource_uri(token.persona_name, project.slug),
                name=f"memory-{project.slug}",
                title=f"{token.persona_name} — {project.name}",
                description=f"Compiled memory of {token.persona_name} in {project.name}: core lessons, "
                f"then working memory, each line with the id recall takes.",
                mime_type="text/plain",
            )
            for project in projects
        ]


def _resource_uri(persona, project):
    return f"memory://{quote(persona, safe='')}/{quote(project, safe='')}"


# --- what the tools do (plain functions, run in worker threads by the SDK) ---------------------


def _memory_text(token, persona, project):
    """(text, data) of a compiled memory, each lesson line carrying its id."""
    _, slug, memory = read_scope(token, persona, project)
    payload = context_payload(memory)
    data = {
        "persona": token.persona_name,
        "project": slug,
        "version": payload["version"],
        "lessons": payload["lessons"],
        "cut_lesson_ids": payload["cut_lesson_ids"],
    }
    if not payload["lessons"]:
        text = (
            f"No lessons yet for {token.persona_name} in {slug}. Record what you learn with save_fact, "
            f"log_learning, log_error or daily_log.\n"
        )
    else:
        text = f"Memory of {token.persona_name} in {slug} (version {payload['version']}).\n\n" + text_with_ids(
            payload["lessons"], usage=MCP_USAGE
        )
    return text, data


def _append(tool, persona, project, **fields):
    token = _agent()
    persona, project = _target(token, persona, project)
    item = s.LessonIn(tool=tool, **{k: v for k, v in fields.items() if v is not None})
    persona_obj, project_obj = write_scope(token, persona, project)
    memory, results = agent_lessons_write(
        token=token.model, persona=persona_obj, project=project_obj, items=[item.model_dump()]
    )
    data = appended_out(memory, results)
    lesson = data["lessons"][0]
    if lesson["status"] == "confirmed":
        text = (
            f"Lesson {lesson['id']} already said this; it is counted as a confirmation "
            f"(memory version {data['version']})."
        )
        if item.expires_on or item.expires_when:
            text += f" Its expiry is unchanged{_expiry_words(lesson)}; use set_expiry to change it."
    else:
        text = (
            f"Saved lesson {lesson['id']} to working memory as {lesson['category']}: {lesson['text']}"
            f"{_expiry_words(lesson)} (memory version {data['version']})."
        )
    return _result(text, data)


def _expiry_words(lesson):
    """' (until …; expires on …)' for a dated lesson dict, '' for a permanent one."""
    parts = []
    if lesson.get("expires_when"):
        parts.append(f"until {lesson['expires_when']}")
    if lesson.get("expires_on"):
        parts.append(f"expires on {lesson['expires_on']}")
    return f" ({'; '.join(parts)})" if parts else ""


_READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)
_APPENDS = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)
# Setting an expiry replaces the lesson's expiry (the same call twice changes nothing) and can be reverted.
_SETS = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False)


def _register(server: MCPServer) -> None:
    """The tools and the resource, in the order clients list them."""
    _register_reads(server)
    _register_lesson_tools(server)
    _register_progress_tools(server)
    _register_resources(server)


def _register_reads(server: MCPServer) -> None:
    """Reading the memory: the compiled text, one lesson with its provenance, a search."""

    @server.tool(
        annotations=_READ_ONLY,
        description=(
            "Your compiled memory of a project: core lessons (approved by people, permanent) then working "
            "memory (recent observations, newest last), trimmed to the memory's budget. Call it at the start "
            "of every task and again after you save lessons if you need the current version. Every line "
            "starts with the lesson's id in brackets; pass an id to recall for its sources. Returns text, "
            "plus the version and the lessons as structured content. Read-only."
        ),
    )
    @db_work
    @_tool_errors
    def get_memory(persona: PersonaArg = None, project: ProjectArg = None) -> CallToolResult:
        token = _agent()
        text, data = _memory_text(token, *_target(token, persona, project))
        return _result(text, data)

    @server.tool(
        annotations=_READ_ONLY,
        description=(
            "One lesson by id (the number in brackets in get_memory or find_lessons) with its provenance: the "
            "interaction it came from and the transcript entries it cites, the lessons it was derived from, "
            "its confirmations and its full change history. Use it when a decision depends on why a lesson "
            "exists. Only lessons of your own memory can be recalled. Read-only."
        ),
    )
    @db_work
    @_tool_errors
    def recall(lesson_id: Annotated[int, Field(description="The lesson's id.", ge=1)]) -> CallToolResult:
        data = recall_payload(_agent(), lesson_id)
        return _result(json.dumps(_jsonable(data), indent=1, ensure_ascii=False), data)

    @server.tool(
        annotations=_READ_ONLY,
        description=(
            "Search your active lessons of a project: by file or folder (a path ending with / means "
            "everything under it), by category, by tier, and by words (each also matching its other forms; "
            '"a phrase", or and -word work), best match first. '
            "Use it before touching a file to see what is known about it. Returns one line per lesson "
            "(id, category, text, refs), 50 per page; pass offset for the next page. Read-only."
        ),
    )
    @db_work
    @_tool_errors
    def find_lessons(
        project: ProjectArg = None,
        path: Annotated[str | None, Field(description="A file ('src/app.py') or folder ('src/auth/').")] = None,
        category: Annotated[s.CATEGORY | None, Field(description="Only this category.")] = None,
        tier: Annotated[s.TIER | None, Field(description="core or working.")] = None,
        words: Annotated[
            str | None,
            Field(max_length=s.MAX_WORDS_CHARS, description="Words to search for, ranked; each matches its forms."),
        ] = None,
        limit: Annotated[int, Field(ge=1, le=200, description="Lessons per page.")] = 50,
        offset: Annotated[int, Field(ge=0, description="Lessons to skip.")] = 0,
        persona: PersonaArg = None,
    ) -> CallToolResult:
        token = _agent()
        _, slug, memory = read_scope(token, *_target(token, persona, project))
        page = lesson_page(memory, path=path, category=category, tier=tier, words=words, limit=limit, offset=offset)
        lines = [
            lesson_line(
                {
                    **item,
                    "refs": [ref["text"] for ref in item["refs"]],
                    "stale_refs": [ref["text"] for ref in item["refs"] if ref["status"] in NEEDS_REVIEW],
                }
            )
            for item in page["items"]
        ]
        more = f"; next page: offset={page['next_offset']}" if page["next_offset"] is not None else ""
        header = f"{page['count']} lesson(s) in {slug} match{more}."
        return _result("\n".join([header, *lines]) + "\n", {"project": slug, **page})


def _register_lesson_tools(server: MCPServer) -> None:
    """Appending lessons to working memory: a fact, a learning, an error and its fix."""

    @server.tool(
        annotations=_APPENDS,
        description=(
            "Record a lasting fact or decision about the project (a working DECISION lesson; pass category "
            "ARCHITECTURE for structure, PATTERN for a convention). Use it when something is settled and "
            "future sessions should not rediscover it. Saying again what an active lesson already says "
            "counts as a confirmation instead of a copy. It only appends to working memory: it cannot make "
            "a lesson core, edit or delete lessons — people do that in the dashboard."
        ),
    )
    @db_work
    @_tool_errors
    def save_fact(
        text: Text,
        category: Annotated[
            Literal["DECISION", "ARCHITECTURE", "PATTERN"] | None,
            Field(description="DECISION (default), ARCHITECTURE or PATTERN."),
        ] = None,
        refs: Refs = None,
        relevance: RelevanceArg = None,
        expires_on: ExpiresOnArg = None,
        expires_when: ExpiresWhenArg = None,
        project: ProjectArg = None,
        persona: PersonaArg = None,
    ) -> CallToolResult:
        return _append(
            "save_fact",
            persona,
            project,
            text=text,
            category=category,
            refs=refs,
            relevance=relevance,
            expires_on=expires_on,
            expires_when=expires_when,
        )

    @server.tool(
        annotations=_APPENDS,
        description=(
            "Record an insight from this session (a working OBSERVATION; pass category PATTERN for a "
            "reusable way of doing things). Use it when you learned something a later session would want "
            "to know. Duplicates of an active lesson count as confirmations. Appends only; people decide "
            "what becomes core."
        ),
    )
    @db_work
    @_tool_errors
    def log_learning(
        text: Text,
        category: Annotated[
            Literal["OBSERVATION", "PATTERN"] | None, Field(description="OBSERVATION (default) or PATTERN.")
        ] = None,
        refs: Refs = None,
        relevance: RelevanceArg = None,
        expires_on: ExpiresOnArg = None,
        expires_when: ExpiresWhenArg = None,
        project: ProjectArg = None,
        persona: PersonaArg = None,
    ) -> CallToolResult:
        return _append(
            "log_learning",
            persona,
            project,
            text=text,
            category=category,
            refs=refs,
            relevance=relevance,
            expires_on=expires_on,
            expires_when=expires_when,
        )

    @server.tool(
        annotations=_APPENDS,
        description=(
            "Record an error you hit and what fixes or avoids it (a working OBSERVATION that keeps the "
            "error message). `text` says what to do; `error` is the message as it appeared. Use it so the "
            "next session does not hit the same wall. Appends only."
        ),
    )
    @db_work
    @_tool_errors
    def log_error(
        text: Text,
        error: Annotated[str, Field(description="The error message that was seen, at most 1000 characters.")],
        refs: Refs = None,
        relevance: RelevanceArg = None,
        expires_on: ExpiresOnArg = None,
        expires_when: ExpiresWhenArg = None,
        project: ProjectArg = None,
        persona: PersonaArg = None,
    ) -> CallToolResult:
        return _append(
            "log_error",
            persona,
            project,
            text=text,
            error=error,
            refs=refs,
            relevance=relevance,
            expires_on=expires_on,
            expires_when=expires_when,
        )

    @server.tool(
        annotations=_SETS,
        description=(
            "Date or undate one of your working lessons (by id): expires_on is the first day it no longer "
            "holds (YYYY-MM-DD), expires_when the event it holds until, in words. The two given replace the "
            "lesson's expiry; give neither to make it permanent again. Use it when a lesson turns out to be "
            "temporary (a workaround until a fix ships, a freeze for a week). Core lessons are refused: a "
            "person decides when they expire. Recorded in the lesson's history; people can revert it."
        ),
    )
    @db_work
    @_tool_errors
    def set_expiry(
        lesson_id: Annotated[int, Field(description="The lesson's id.", ge=1)],
        expires_on: ExpiresOnArg = None,
        expires_when: ExpiresWhenArg = None,
    ) -> CallToolResult:
        token = _agent()
        wanted = s.ExpiryIn(expires_on=expires_on, expires_when=expires_when)
        lesson = lesson_for_write(token, lesson_id)
        lesson, changed = agent_lesson_set_expiry(
            token=token.model, lesson=lesson, expires_on=wanted.expires_on, expires_when=wanted.expires_when
        )
        data = expiry_set_out(lesson)
        words = _expiry_words(data) or " (permanent)"
        text = (
            f"Lesson {data['id']} now{words} (memory version {data['version']})."
            if changed
            else f"Lesson {data['id']} already had this expiry{words}; nothing changed."
        )
        return _result(text, data)


def _register_progress_tools(server: MCPServer) -> None:
    """Recording the work itself: a progress note, an interaction to reflect on."""

    @server.tool(
        annotations=_APPENDS,
        description=(
            "Note progress for today (a low-relevance working OBSERVATION: the first thing trimmed when "
            "memory is over budget). Use it for what was done or is left, not for lessons worth keeping — "
            "use save_fact or log_learning for those. Appends only."
        ),
    )
    @db_work
    @_tool_errors
    def daily_log(
        text: Text,
        refs: Refs = None,
        expires_on: ExpiresOnArg = None,
        expires_when: ExpiresWhenArg = None,
        project: ProjectArg = None,
        persona: PersonaArg = None,
    ) -> CallToolResult:
        return _append(
            "daily_log", persona, project, text=text, refs=refs, expires_on=expires_on, expires_when=expires_when
        )

    @server.tool(
        annotations=_APPENDS,
        description=(
            "Submit what happened in a piece of work (a review, a fix, a deliberation) for reflection: the "
            "server distils it into working lessons in the background. Give a summary, the trigger, the "
            "outcome and the files changed; an optional transcript lets the lessons cite its entries. Returns "
            "the interaction id and its status (queued, or reflected with the new lesson ids)."
        ),
    )
    @db_work
    @_tool_errors
    def report_interaction(
        summary: Annotated[str, Field(description="What was done and what was learned, in plain words.")],
        trigger_type: Annotated[str, Field(description="What started it: pr_review, bug_fix, deliberation …")],
        outcome: Annotated[str, Field(description="How it ended: merged, fixed, rejected …")] = "",
        files_changed: Annotated[
            list[str] | None, Field(description="Paths, optionally with lines: 'src/app.py#L10-L20'.")
        ] = None,
        transcript: Annotated[
            list[dict] | None,
            Field(description="Optional entries {id, role, at, text}; lessons may cite their ids."),
        ] = None,
        project: ProjectArg = None,
        persona: PersonaArg = None,
    ) -> CallToolResult:
        token = _agent()
        persona, project = _target(token, persona, project)
        payload = s.InteractionIn(
            trigger_type=trigger_type,
            outcome=outcome,
            summary=summary,
            files_changed=files_changed or [],
            transcript=transcript or [],
        )
        persona_obj, project_obj = write_scope(token, persona, project)
        interaction = agent_interaction_submit(
            token=token.model,
            persona=persona_obj,
            project=project_obj,
            trigger_type=payload.trigger_type,
            outcome=payload.outcome,
            summary=payload.summary,
            files_changed=payload.files_changed,
            transcript=[entry.model_dump(mode="json") for entry in payload.transcript],
        )
        data = interaction_out(interaction, interaction.lessons.values_list("pk", flat=True))
        lessons = f"; lessons {', '.join(map(str, data['lesson_ids']))}" if data["lesson_ids"] else ""
        text = f"Interaction {data['id']} is {data['status']}{lessons}."
        if data["error"]:
            text += f" Reflection error: {data['error']}"
        return _result(text, data)


def _register_resources(server: MCPServer) -> None:
    """The compiled memory as a resource, for clients that read resources rather than call tools."""

    @server.resource(
        RESOURCE_TEMPLATE,
        name="memory",
        title="Compiled memory",
        description="The compiled memory of a persona in a project (your own persona only).",
        mime_type="text/plain",
    )
    @db_work
    def memory_resource(persona: str, project: str) -> str:
        try:
            return _memory_text(_agent(), persona, project)[0]
        except (OutOfScope, NotFound) as exc:
            raise MCPError(code=INVALID_PARAMS, message=str(exc)) from None
