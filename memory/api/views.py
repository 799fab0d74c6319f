"""The agent API, version 1: agents read their compiled memory and append to it.

A token reads and appends only its own persona's memory (and only its project when it is
scoped to one). There is no endpoint that approves, applies, reverts or edits prompts.
"""

import functools
from typing import Literal

from django.core.exceptions import PermissionDenied
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import HttpResponse
from django.utils import timezone
from ninja import Field, NinjaAPI, Path, Query, Schema, Status
from ninja.errors import AuthenticationError, HttpError, ValidationError
from pydantic import field_validator

from memory.api import schemas as s
from memory.api.auth import AgentTokenAuth, PayloadTooLarge, agent_token_for_bearer
from memory.api.selectors import (
    NotFound,
    OutOfScope,
    appended_out,
    context_payload,
    expiry_set_out,
    interaction_out,
    lesson_for_write,
    lesson_page,
    read_scope,
    recall_payload,
    write_scope,
)
from memory.api.selectors import (
    interaction_status as interaction_status_payload,
)
from memory.api.services import (
    LessonNotLive,
    agent_interaction_submit,
    agent_lesson_set_expiry,
    agent_lessons_write,
)
from memory.selectors import compiled_memory_text
from personas.compiler import compile_system_prompt


class AgentAPI(NinjaAPI):
    def get_openapi_schema(self, **kwargs):
        schema = super().get_openapi_schema(**kwargs)
        # The web server, not the app, refuses an over-long URL: documented, with no JSON body.
        for operations in schema["paths"].values():
            for operation in operations.values():
                operation["responses"].setdefault(
                    414,
                    {
                        "description": "URL too long (refused by the web server; gunicorn: request line over 4094 bytes)",
                    },
                )
        return schema


api = AgentAPI(
    title="Night Watch Memory — agent API",
    version="1",
    description=(
        "Agents read their compiled memory and append lessons. Authenticate with "
        "`Authorization: Bearer <token>`; a token is created with `manage.py create_agent_token` "
        "and can reach only its own persona's memory."
    ),
    urls_namespace="api-v1",
    auth=AgentTokenAuth(),
)

ERRORS = {400: s.ErrorOut, 401: s.ErrorOut, 403: s.ErrorOut, 404: s.ErrorOut, 413: s.ErrorOut, 422: s.ErrorOut}


# --- errors: always JSON, always naming the field -------------------------------------------


def _error(request, status, detail, fields=None):
    return api.create_response(request, {"detail": detail, "fields": fields or {}}, status=status)


@api.exception_handler(ValidationError)
def on_validation_error(request, exc):
    fields = s.field_errors(exc.errors)
    names = ", ".join(fields)
    return _error(request, 422, f"invalid input: {names}", fields)


@api.exception_handler(DjangoValidationError)
def on_model_validation_error(request, exc):
    fields = exc.message_dict if hasattr(exc, "error_dict") else {"body": exc.messages}
    return _error(request, 422, f"invalid input: {', '.join(fields)}", fields)


@api.exception_handler(PayloadTooLarge)
def on_too_large(request, exc):
    from django.conf import settings

    return _error(request, 413, f"request body is larger than {settings.API_MAX_BODY_BYTES} bytes")


@api.exception_handler(AuthenticationError)
def on_unauthenticated(request, exc):
    response = _error(request, 401, "a valid agent token is required: Authorization: Bearer <token>")
    response["WWW-Authenticate"] = "Bearer"
    return response


@api.exception_handler(HttpError)
def on_http_error(request, exc):
    if exc.status_code == 400:  # the only 400 is a body that is not JSON
        return _error(request, 400, "the request body is not valid JSON", {"body": [str(exc)]})
    return _error(request, exc.status_code, str(exc))


@api.exception_handler(OutOfScope)
def on_out_of_scope(request, exc):
    return _error(request, 403, str(exc))


@api.exception_handler(PermissionDenied)
def on_permission_denied(request, exc):
    return _error(request, 403, str(exc))


@api.exception_handler(LessonNotLive)
def on_not_live(request, exc):
    return _error(request, 409, str(exc))


@api.exception_handler(NotFound)
def on_not_found(request, exc):
    return _error(request, 404, str(exc))


# --- endpoints ------------------------------------------------------------------------------


@api.get("/health", auth=None, response=s.HealthOut, tags=["service"], summary="Liveness check")
def health(request):
    return {"status": "ok"}


MEMORY_PATH = "/memory/{persona}/{project}"


TEXT_200 = {
    "description": "The text (`?format=json`: a JSON object)",
    "content": {"text/plain": {"schema": {"type": "string"}}},
}


@api.get(
    MEMORY_PATH + "/context",
    response={200: s.ContextOut, **ERRORS},
    openapi_extra={
        "responses": {
            200: TEXT_200,
            304: {"description": "Not modified: the If-None-Match ETag is the current version (no body)"},
        }
    },
    tags=["memory"],
    summary="Compiled memory",
    description="`## Core Lessons` then `## Working Memory`, within budgets, as text/plain; "
    "`?format=json` adds the id of every lesson in it (for recall).",
)
def memory_context(request, persona: str, project: str, format: Literal["text", "json"] = "text"):
    _, slug, memory = read_scope(request.auth, persona, project)
    if format == "json":
        payload = context_payload(memory)
        return {"persona": request.auth.persona_name, "project": slug, **payload}
    return context_text_response(request, memory)


def context_text_response(request, memory):
    """The compiled text of a memory the token may read, or 304 when the agent holds it already."""
    # The version and budgets identify the text, so an agent holding the current text gets a 304.
    # … and the day: an expiring lesson leaves the text on its expires_on day without a new version.
    etag = (
        f'"m{memory.pk or 0}-v{memory.version}-b{memory.core_char_budget}.{memory.working_char_budget}'
        f'-d{timezone.localdate():%Y%m%d}"'
    )
    if etag in [tag.strip() for tag in request.headers.get("If-None-Match", "").split(",")]:
        response = HttpResponse(status=304)
    else:
        text = compiled_memory_text(memory) if memory.pk else ""
        response = HttpResponse(text, content_type="text/plain; charset=utf-8")
    response["ETag"] = etag
    response["X-Memory-Version"] = str(memory.version)
    return response


@functools.cache
def api_view(url_name):
    """The API's own view for one of its operations (what its URL pattern calls)."""
    for pattern in api.urls[0]:
        if getattr(pattern, "name", None) == url_name:
            return pattern.callback
    raise LookupError(f"the agent API has no operation named {url_name!r}")


def memory_context_text(request, persona, project):
    """GET …/context as text, the read every agent turn makes, in a plain Django view.

    The API framework parses the path and query into validated models and runs its
    authentication hooks on every request; for this one read that cost as much as the rest
    of serving the cached text. This view serves the common case itself, with the same token
    check and scope rules and the same response, and hands every other request (another method,
    any query string such as ?format=json, no or a bad token, a name out of scope or unknown)
    to the API's own view, so errors, their JSON bodies and the documented schema stay as they are.
    """
    scheme, _, raw = request.headers.get("Authorization", "").partition(" ")
    if request.method == "GET" and not request.GET and scheme.lower() == "bearer":
        agent_token = agent_token_for_bearer(raw, cached=True)
        if agent_token is not None:
            try:
                _, _, memory = read_scope(agent_token, persona, project)
            except (NotFound, OutOfScope):
                pass
            else:
                request.agent_token = agent_token
                return context_text_response(request, memory)
    return api_view("memory_context")(request, persona=persona, project=project)


@api.get(
    MEMORY_PATH + "/prompt",
    response=ERRORS,
    tags=["memory"],
    openapi_extra={
        "responses": {200: {"description": "The prompt", "content": {"text/plain": {"schema": {"type": "string"}}}}}
    },
    summary="Full compiled system prompt (text/plain)",
)
def memory_prompt(request, persona: str, project: str):
    _, _, memory = read_scope(request.auth, persona, project)
    text = compile_system_prompt(request.auth.persona, compiled_memory_text(memory) if memory.pk else "")
    response = HttpResponse(text, content_type="text/plain; charset=utf-8")
    response["X-Memory-Version"] = str(memory.version)
    return response


@api.post(
    MEMORY_PATH + "/interactions",
    response={202: s.InteractionOut, **ERRORS},
    tags=["reflection"],
    summary="Submit an interaction for reflection",
    description="Stores what happened and queues a reflection; poll `GET /interactions/{id}` for the result.",
)
def interaction_submit(request, persona: str, project: str, payload: s.InteractionIn):
    persona_obj, project_obj = write_scope(request.auth, persona, project)
    interaction = agent_interaction_submit(
        token=request.auth.model,
        persona=persona_obj,
        project=project_obj,
        trigger_type=payload.trigger_type,
        outcome=payload.outcome,
        summary=payload.summary,
        files_changed=payload.files_changed,
        transcript=[entry.model_dump(mode="json") for entry in payload.transcript],
    )
    return Status(202, interaction_out(interaction, interaction.lessons.values_list("pk", flat=True)))


@api.get(
    "/interactions/{interaction_id}",
    response={200: s.InteractionOut, **ERRORS},
    tags=["reflection"],
    summary="Reflection status of one interaction",
)
def interaction_status(request, interaction_id: int = Path(..., ge=1, le=s.MAX_ID)):
    return interaction_status_payload(request.auth, interaction_id)


@api.post(
    MEMORY_PATH + "/lessons",
    response={201: s.LessonsAppendedOut, **ERRORS},
    tags=["lessons"],
    summary="Append working lessons (workspace tools)",
    description=(
        "One call appends 1–20 lessons, all or nothing. Tools: `save_fact` → DECISION (or ARCHITECTURE, "
        "PATTERN); `log_learning` → OBSERVATION (or PATTERN); `log_error` → OBSERVATION with the `error` "
        "text; `daily_log` → OBSERVATION, low relevance. `tool` is optional: a lesson with only a `category` "
        "(any of the six) is stored as it is, at medium relevance unless given. All land in the working tier; an exact duplicate "
        "of an active lesson is confirmed instead of copied."
    ),
)
def lessons_append(request, persona: str, project: str, payload: s.LessonsIn):
    persona_obj, project_obj = write_scope(request.auth, persona, project)
    memory, results = agent_lessons_write(
        token=request.auth.model,
        persona=persona_obj,
        project=project_obj,
        items=[item.model_dump() for item in payload.lessons],
    )
    return Status(201, appended_out(memory, results))


class LessonFilters(Schema):
    path: str | None = Field(
        None,
        min_length=1,
        max_length=500,
        json_schema_extra={"pattern": s.PATH_PATTERN},
        description="A file, or a folder ending with / (no '..' part)",
    )
    category: s.CATEGORY | None = None
    tier: s.TIER | None = None
    words: (
        s.Text(
            s.SINGLE_LINE_PATTERN, max_length=s.MAX_WORDS_CHARS, description="Words that must all appear in the text"
        )
        | None
    ) = None
    limit: int = Field(50, ge=1, le=200)
    offset: int = Field(0, ge=0, le=s.MAX_OFFSET)

    @field_validator("path")
    @classmethod
    def valid_path(cls, value):
        return None if value is None else s.check_path(value)


@api.get(
    MEMORY_PATH + "/lessons",
    response={200: s.LessonPage, **ERRORS},
    tags=["lessons"],
    summary="Active lessons, by path (a folder ends with /), category, tier and words",
)
def lessons_list(request, persona: str, project: str, filters: Query[LessonFilters]):
    _, _, memory = read_scope(request.auth, persona, project)
    return lesson_page(
        memory,
        path=filters.path,
        category=filters.category,
        tier=filters.tier,
        words=filters.words,
        limit=filters.limit,
        offset=filters.offset,
    )


@api.get(
    "/lessons/{lesson_id}",
    response={200: s.RecallOut, **ERRORS},
    tags=["lessons"],
    summary="Recall one lesson with its provenance and history",
)
def lesson_recall(request, lesson_id: int = Path(..., ge=1, le=s.MAX_ID)):
    return recall_payload(request.auth, lesson_id)


@api.put(
    "/lessons/{lesson_id}/expiry",
    response={200: s.ExpirySetOut, 409: s.ErrorOut, **ERRORS},
    tags=["lessons"],
    summary="Set or clear a working lesson's expiry",
    description=(
        "The body is the lesson's whole expiry: `expires_on` (YYYY-MM-DD, the first day it no longer holds) "
        "and/or `expires_when` (the event it holds until, in words); what is left out or null is cleared, so "
        "`{}` makes the lesson permanent again. Recorded in the lesson's history like any change. Only working "
        "lessons: a core lesson's expiry is a person's decision (403). A retired lesson takes none (409)."
    ),
)
def lesson_expiry_set(request, payload: s.ExpiryIn, lesson_id: int = Path(..., ge=1, le=s.MAX_ID)):
    lesson = lesson_for_write(request.auth, lesson_id)
    lesson, _ = agent_lesson_set_expiry(
        token=request.auth.model, lesson=lesson, expires_on=payload.expires_on, expires_when=payload.expires_when
    )
    return expiry_set_out(lesson)
