"""The agent API, version 1: agents read their compiled memory and append to it.

A token reads and appends only its own persona's memory (and only its project when it is
scoped to one). There is no endpoint that approves, applies, reverts or edits prompts.
"""

from typing import Literal

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import transaction
from django.http import HttpResponse
from ninja import Field, NinjaAPI, Path, Query, Schema, Status
from ninja.errors import AuthenticationError, HttpError, ValidationError
from pydantic import field_validator

from memory.api import schemas as s
from memory.api.auth import AgentTokenAuth, PayloadTooLarge
from memory.api.selectors import context_payload, lesson_for_recall, lesson_list, memory_lookup, source_entries
from memory.api.services import agent_lessons_append
from memory.models import Interaction, Memory
from memory.pipeline.prompts import CONTEXT_USAGE
from memory.reflection.services import interaction_create
from memory.selectors import compiled_memory_text
from memory.services import memory_get_or_create
from memory.textcheck import text_problem
from personas.compiler import compile_system_prompt
from personas.models import Persona, Project

class AgentAPI(NinjaAPI):
    def get_openapi_schema(self, **kwargs):
        schema = super().get_openapi_schema(**kwargs)
        # The web server, not the app, refuses an over-long URL: documented, with no JSON body.
        for operations in schema["paths"].values():
            for operation in operations.values():
                operation["responses"].setdefault(414, {
                    "description": "URL too long (refused by the web server; gunicorn: request line over 4094 bytes)",
                })
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
    fields = {}
    for err in exc.errors:
        # A lesson is one of the tools' shapes: its errors are named lessons.N.field, without the tool's tag.
        loc = list(err.get("loc", ()))
        if loc and loc[0] in ("body", "query", "path"):  # where the value was sent, not its name
            loc = loc[1:]
        if loc and loc[0] in ("payload", "filters"):
            loc = loc[1:]
        loc = [str(part) for part in loc if part not in s.TOOLS]
        if err.get("type") in ("union_tag_invalid", "union_tag_not_found"):
            loc.append("tool")
        fields.setdefault(".".join(loc) or "body", []).append(err.get("msg", "invalid"))
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


# --- scope ----------------------------------------------------------------------------------

def _real_name(name, what):
    """A name holding control characters names nothing (names are checked when made): 404 before any query."""
    if text_problem(name):
        raise HttpError(404, f"no {what} named {name[:100]!r}")


def _persona_in_scope(token, name):
    """The token's persona id when the name is its own; 404 for an unknown name, 403 for another persona."""
    _real_name(name, "persona")
    if token.persona_name.casefold() == name.casefold():
        return token.persona_id
    if Persona.objects.not_archived().filter(name__iexact=name).exists():
        raise HttpError(403, f"this token cannot reach the memory of persona {name!r}")
    raise HttpError(404, f"no persona named {name!r}")


def _project_in_scope(token, slug):
    _real_name(slug, "project")
    project = Project.objects.filter(slug=slug).first()
    if project is None:
        raise HttpError(404, f"no project with slug {slug!r}")
    if token.project_id and token.project_id != project.pk:
        raise HttpError(403, f"this token is limited to project {token.project_slug!r}")
    return project


def _scope(request, persona_name, project_slug):
    """(token, persona, project) for a write."""
    token = request.auth
    _persona_in_scope(token, persona_name)
    project = _project_in_scope(token, project_slug)
    return token, token.persona, project


def _read_scope(request, persona_name, project_slug):
    """(persona id, project slug, memory) for a read: one query when the memory exists.

    A memory with no lesson yet is returned unsaved (pk None): it compiles to "".
    """
    token = request.auth
    persona_id = _persona_in_scope(token, persona_name)
    _real_name(project_slug, "project")
    memory = memory_lookup(persona_id, project_slug)
    if memory is None:
        project = _project_in_scope(token, project_slug)
        return persona_id, project.slug, Memory(persona_id=persona_id, project=project, version=0)
    if token.project_id and memory.project_id != token.project_id:
        raise HttpError(403, f"this token is limited to project {token.project_slug!r}")
    return persona_id, project_slug, memory


def _memory_for_write(persona, project):
    return memory_get_or_create(persona=persona, project=project)


def _check_lesson_scope(token, lesson):
    if lesson.memory.persona_id != token.persona_id:
        raise HttpError(403, "this lesson belongs to another persona's memory")
    if token.project_id and lesson.memory.project_id != token.project_id:
        raise HttpError(403, f"this token is limited to project {token.project_slug!r}")


def _lesson_out(lesson):
    return {
        "id": lesson.pk,
        "tier": lesson.tier,
        "category": lesson.category,
        "text": lesson.text,
        "relevance": lesson.relevance,
        "protected": lesson.protected,
        "status": lesson.status,
        "vague": lesson.vague,
        "lesson_date": lesson.lesson_date,
        "refs": [
            {"path": r.path, "start_line": r.start_line, "end_line": r.end_line, "text": r.as_text()}
            for r in lesson.refs.all()
        ],
    }


# --- endpoints ------------------------------------------------------------------------------

@api.get("/health", auth=None, response=s.HealthOut, tags=["service"], summary="Liveness check")
def health(request):
    return {"status": "ok"}


MEMORY_PATH = "/memory/{persona}/{project}"


TEXT_200 = {"description": "The text (`?format=json`: a JSON object)",
            "content": {"text/plain": {"schema": {"type": "string"}}}}


@api.get(
    MEMORY_PATH + "/context",
    response={200: s.ContextOut, **ERRORS},
    openapi_extra={"responses": {
        200: TEXT_200,
        304: {"description": "Not modified: the If-None-Match ETag is the current version (no body)"},
    }},
    tags=["memory"],
    summary="Compiled memory",
    description="`## Core Lessons` then `## Working Memory`, within budgets, as text/plain; "
    "`?format=json` adds the id of every lesson in it (for recall).",
)
def memory_context(request, persona: str, project: str, format: Literal["text", "json"] = "text"):
    _, slug, memory = _read_scope(request, persona, project)
    if format == "json":
        payload = context_payload(memory) if memory.pk else _empty_context()
        return {"persona": request.auth.persona_name, "project": slug, **payload}
    # The version identifies the text, so an agent holding the current text gets a 304.
    etag = f'"m{memory.pk or 0}-v{memory.version}"'
    if etag in [tag.strip() for tag in request.headers.get("If-None-Match", "").split(",")]:
        response = HttpResponse(status=304)
    else:
        text = compiled_memory_text(memory) if memory.pk else ""
        response = HttpResponse(text, content_type="text/plain; charset=utf-8")
    response["ETag"] = etag
    response["X-Memory-Version"] = str(memory.version)
    return response


def _empty_context():
    return {"version": 0, "text": "", "lessons": [], "cut_lesson_ids": [], "usage": CONTEXT_USAGE,
            "text_with_ids": ""}


@api.get(MEMORY_PATH + "/prompt", response=ERRORS, tags=["memory"],
         openapi_extra={"responses": {200: {"description": "The prompt",
                                            "content": {"text/plain": {"schema": {"type": "string"}}}}}},
         summary="Full compiled system prompt (text/plain)")
def memory_prompt(request, persona: str, project: str):
    _, _, memory = _read_scope(request, persona, project)
    text = compile_system_prompt(request.auth.persona, compiled_memory_text(memory) if memory.pk else "")
    response = HttpResponse(text, content_type="text/plain; charset=utf-8")
    response["X-Memory-Version"] = str(memory.version)
    return response


def _interaction_out(interaction, lesson_ids=()):
    return {
        "id": interaction.pk,
        "status": interaction.status,
        "error": interaction.error,
        "lesson_ids": list(lesson_ids),
        "created_at": interaction.created_at,
        "reflected_at": interaction.reflected_at,
    }


@api.post(MEMORY_PATH + "/interactions", response={202: s.InteractionOut, **ERRORS}, tags=["reflection"],
          summary="Submit an interaction for reflection",
          description="Stores what happened and queues a reflection; poll `GET /interactions/{id}` for the result.")
def interaction_submit(request, persona: str, project: str, payload: s.InteractionIn):
    token, persona_obj, project_obj = _scope(request, persona, project)
    with transaction.atomic():
        memory = _memory_for_write(persona_obj, project_obj)
        interaction = interaction_create(
            memory=memory, trigger_type=payload.trigger_type, outcome=payload.outcome, summary=payload.summary,
            files_changed=payload.files_changed,
            transcript=[entry.model_dump(mode="json") for entry in payload.transcript], agent_token=token.model,
        )
    interaction.refresh_from_db(fields=["status", "error", "reflected_at"])  # in-process tasks have run already
    return Status(202, _interaction_out(interaction, interaction.lessons.values_list("pk", flat=True)))


@api.get("/interactions/{interaction_id}", response={200: s.InteractionOut, **ERRORS}, tags=["reflection"],
         summary="Reflection status of one interaction")
def interaction_status(request, interaction_id: int = Path(..., ge=1, le=s.MAX_ID)):
    interaction = (
        Interaction.objects.select_related("memory").prefetch_related("lessons").filter(pk=interaction_id).first()
    )
    if interaction is None:
        raise HttpError(404, f"no interaction {interaction_id}")
    token = request.auth
    if interaction.memory.persona_id != token.persona_id or (
        token.project_id and interaction.memory.project_id != token.project_id
    ):
        raise HttpError(403, "this interaction belongs to memory this token cannot reach")
    return _interaction_out(interaction, [lesson.pk for lesson in interaction.lessons.all()])


@api.post(MEMORY_PATH + "/lessons", response={201: s.LessonsAppendedOut, **ERRORS}, tags=["lessons"],
          summary="Append working lessons (workspace tools)",
          description=(
              "One call appends 1–20 lessons, all or nothing. Tools: `save_fact` → DECISION (or ARCHITECTURE, "
              "PATTERN); `log_learning` → OBSERVATION (or PATTERN); `log_error` → OBSERVATION with the `error` "
              "text; `daily_log` → OBSERVATION, low relevance. All land in the working tier; an exact duplicate "
              "of an active lesson is confirmed instead of copied."
          ))
def lessons_append(request, persona: str, project: str, payload: s.LessonsIn):
    token, persona_obj, project_obj = _scope(request, persona, project)
    with transaction.atomic():
        memory = _memory_for_write(persona_obj, project_obj)
        memory, results = agent_lessons_append(
            memory=memory, token=token.model, items=[item.model_dump() for item in payload.lessons]
        )
    return Status(201, {
        "lessons": [
            {"id": lesson.pk, "status": status, "tier": lesson.tier, "category": lesson.category, "text": lesson.text}
            for lesson, status in results
        ],
        "version": memory.version,
    })


class LessonFilters(Schema):
    path: str | None = Field(None, min_length=1, max_length=500, json_schema_extra={"pattern": s.PATH_PATTERN},
                             description="A file, or a folder ending with / (no '..' part)")
    category: s.CATEGORY | None = None
    tier: s.TIER | None = None
    limit: int = Field(50, ge=1, le=200)
    offset: int = Field(0, ge=0, le=s.MAX_OFFSET)

    @field_validator("path")
    @classmethod
    def valid_path(cls, value):
        return None if value is None else s.check_path(value)


@api.get(MEMORY_PATH + "/lessons", response={200: s.LessonPage, **ERRORS}, tags=["lessons"],
         summary="Active lessons, by path (a folder ends with /), category and tier")
def lessons_list(request, persona: str, project: str, filters: Query[LessonFilters]):
    _, _, memory = _read_scope(request, persona, project)
    if memory.pk is None:
        count, items = 0, []
    else:
        count, items = lesson_list(
            memory, path=filters.path, category=filters.category, tier=filters.tier,
            limit=filters.limit, offset=filters.offset,
        )
    next_offset = filters.offset + filters.limit
    return {
        "count": count,
        "limit": filters.limit,
        "offset": filters.offset,
        "next_offset": next_offset if next_offset < count else None,
        "items": [_lesson_out(lesson) for lesson in items],
    }


@api.get("/lessons/{lesson_id}", response={200: s.RecallOut, **ERRORS}, tags=["lessons"],
         summary="Recall one lesson with its provenance and history")
def lesson_recall(request, lesson_id: int = Path(..., ge=1, le=s.MAX_ID)):
    lesson = lesson_for_recall(lesson_id)
    if lesson is None:
        raise HttpError(404, f"no lesson {lesson_id}")
    _check_lesson_scope(request.auth, lesson)
    interaction = lesson.interaction
    return {
        **_lesson_out(lesson),
        "persona": lesson.memory.persona.name,
        "project": lesson.memory.project.slug,
        "source_entries": source_entries(lesson),
        "interaction": None if interaction is None else {
            "id": interaction.pk, "trigger_type": interaction.trigger_type, "outcome": interaction.outcome,
            "summary": interaction.summary, "created_at": interaction.created_at,
        },
        "derived_from": [
            {"id": d.pk, "tier": d.tier, "category": d.category, "text": d.text, "status": d.status}
            for d in lesson.derived_from.all()
        ],
        "superseded_by": lesson.superseded_by_id,
        "source_entry_ids": lesson.source_entry_ids,
        "observed_at": lesson.observed_at,
        "confirmations": [c.confirmed_on for c in lesson.confirmations.all()],
        "history": [
            {
                "id": c.pk, "action": c.action, "at": c.created_at, "actor": c.batch.actor_display,
                "batch_id": c.batch_id, "batch_kind": c.batch.kind, "reason": c.batch.reason,
                "before": c.before, "after": c.after, "reverted": c.reverted_by_id is not None,
            }
            for c in lesson.changes.all()
        ],
    }
