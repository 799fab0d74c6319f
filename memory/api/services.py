"""Writes the agent API makes: the workspace tools of an agent, as working lessons.

Tool → lesson mapping (every lesson an agent writes is a working lesson; only people promote to core):
- save_fact:    a lasting fact about the project. Category DECISION (default), ARCHITECTURE or PATTERN.
- log_learning: an insight from the session. Category OBSERVATION (default) or PATTERN.
- log_error:    an error pattern and what to do about it. OBSERVATION; `error` (required) is kept in the text.
- daily_log:    session progress. OBSERVATION with low relevance (the first thing a budget cuts).
- no tool:      a plain working lesson of the given category (any of the six); a category is then required.
Agents may set relevance low, medium or high; critical is for people, since critical lessons are never cut.
An exact duplicate of an active lesson confirms that lesson instead of adding a copy.
A lesson may say when it stops holding (expires_on, expires_when), when written or later; an agent
dates working lessons only: a core lesson's expiry is a person's decision.
"""

import re
from datetime import date
from typing import TYPE_CHECKING, Any

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction

from memory import services
from memory.models import AgentToken, ChangeBatch, Interaction, Lesson, LessonStatus, Memory, Relevance, Tier
from memory.reflection.services import interaction_create

if TYPE_CHECKING:
    from personas.models import Persona, Project

TOOL_CATEGORIES = {
    "save_fact": ("DECISION", "ARCHITECTURE", "PATTERN"),
    "log_learning": ("OBSERVATION", "PATTERN"),
    "log_error": ("OBSERVATION",),
    "daily_log": ("OBSERVATION",),
}
TOOL_RELEVANCE = {"daily_log": Relevance.LOW}


def _one_line(text: str | None) -> str:
    return re.sub(r"\s+", " ", text or "").strip()


def _text(item: dict[str, Any]) -> str:
    text = item["text"].strip()
    if "\n" in text:
        raise ValidationError({"text": ["lesson text must be a single line"]})
    return text


def tool_lesson_fields(item: dict[str, Any]) -> tuple[str, str, str]:
    """(category, text, relevance) for one tool call; ValidationError naming the field otherwise."""
    if not item.get("tool"):
        if not item.get("category"):
            raise ValidationError({"category": ["give a category (or a tool, which implies one)"]})
        return item["category"], _text(item), item.get("relevance") or Relevance.MEDIUM
    allowed = TOOL_CATEGORIES[item["tool"]]
    category = item.get("category") or allowed[0]
    if category not in allowed:
        raise ValidationError({"category": [f"{item['tool']} takes category {' or '.join(allowed)}, not {category}"]})
    text = _text(item)
    if item["tool"] == "log_error":
        error = _one_line(item.get("error"))
        if not error:
            raise ValidationError({"error": ["log_error needs the error message that was seen"]})
        text = f"{text} — error: {error}"
    relevance = item.get("relevance") or TOOL_RELEVANCE.get(item["tool"], Relevance.MEDIUM)
    return category, text, relevance


@transaction.atomic
def agent_lessons_append(
    *, memory: Memory, token: AgentToken, items: list[dict[str, Any]]
) -> tuple[Memory, list[tuple[Lesson, str]]]:
    """Append the lessons of one API call as one batch; all or nothing.

    `items` are dicts with tool, text, category, refs, relevance, error. Returns a list of
    (lesson, "created" | "confirmed").
    """
    memory = Memory.objects.select_for_update().get(pk=memory.pk)
    actor = services.Actor.agent(token)
    errors: dict[str, list[str]] = {}
    prepared: list[tuple[dict[str, Any], str, str, str]] = []
    for i, item in enumerate(items):
        try:
            category, text, relevance = tool_lesson_fields(item)
            services.validate_lesson_fields(tier=Tier.WORKING, category=category, text=text, relevance=relevance)
        except ValidationError as exc:
            for field, messages in exc.message_dict.items():
                errors[f"lessons.{i}.{field}"] = messages
            continue
        prepared.append((item, category, text, relevance))
    if errors:
        raise ValidationError(errors)
    results = services.lessons_append_or_confirm(
        memory=memory,
        actor=actor,
        kind=ChangeBatch.Kind.AGENT,
        label=f"Written by agent token {token.prefix}",
        reason=lambda i: f"{prepared[i][0].get('tool') or 'a lesson'} through the agent API",
        drafts=[
            services.LessonDraft(
                text=text,
                category=category,
                refs=item.get("refs") or [],
                relevance=relevance,
                expires_on=item.get("expires_on"),
                expires_when=item.get("expires_when") or "",
            )
            for item, category, text, relevance in prepared
        ],
    )
    return memory, results


@transaction.atomic
def agent_lessons_write(
    *, token: AgentToken, persona: "Persona", project: "Project", items: list[dict[str, Any]]
) -> tuple[Memory, list[tuple[Lesson, str]]]:
    """Append an agent's lessons to its memory in the project, creating the memory on first write.

    The memory is created in the same transaction, so a call refused for one bad lesson leaves
    nothing behind. Returns (memory, [(lesson, "created" | "confirmed")]).
    """
    memory = services.memory_get_or_create(persona=persona, project=project)
    return agent_lessons_append(memory=memory, token=token, items=items)


class LessonNotLive(Exception):
    """The lesson is retired (deleted, superseded, promoted): only a live lesson takes an expiry."""


@transaction.atomic
def agent_lesson_set_expiry(
    *, token: AgentToken, lesson: Lesson, expires_on: date | None, expires_when: str | None
) -> tuple[Lesson, bool]:
    """Set or clear (None, "") the expiry of a working lesson the token may reach, as one agent batch.

    The caller has checked the lesson is in the token's scope. Returns (lesson, changed): giving
    the expiry the lesson has already writes nothing. Core lessons are refused (PermissionDenied),
    clearing included: their expiry is a person's decision.
    """
    # The write path locks the lesson and checks it is live again; its tier never changes.
    if lesson.tier == Tier.CORE:
        raise PermissionDenied(
            f"lesson {lesson.pk} is a core lesson: only a person decides when it expires "
            "(ask a team lead, who can set it in the dashboard)"
        )
    if lesson.status != LessonStatus.ACTIVE:
        raise LessonNotLive(f"lesson {lesson.pk} is {lesson.status}; only a live lesson can expire")
    expires_when = (expires_when or "").strip()
    if (lesson.expires_on, lesson.expires_when) == (expires_on, expires_when):
        return lesson, False
    batch = services.batch_create(
        memory=lesson.memory,
        kind=ChangeBatch.Kind.AGENT,
        actor=services.Actor.agent(token),
        label=f"Written by agent token {token.prefix}",
        reason="expiry set through the agent API"
        if expires_on or expires_when
        else "expiry cleared through the agent API",
    )
    lesson = services.lesson_set_expiry(
        lesson=lesson,
        expires_on=expires_on,
        expires_when=expires_when,
        actor=services.Actor.agent(token),
        batch=batch,
    )
    return lesson, True


def agent_interaction_submit(
    *,
    token: AgentToken,
    persona: "Persona",
    project: "Project",
    trigger_type: str,
    outcome: str,
    summary: str,
    files_changed: list[str],
    transcript: list[dict[str, Any]],
) -> Interaction:
    """Store what an agent did and queue its reflection; returns the interaction, refreshed.

    In-process tasks (no broker) have already reflected when this returns, so the status and
    lessons are current either way.
    """
    with transaction.atomic():
        memory = services.memory_get_or_create(persona=persona, project=project)
        interaction = interaction_create(
            memory=memory,
            trigger_type=trigger_type,
            outcome=outcome,
            summary=summary,
            files_changed=files_changed,
            transcript=transcript,
            agent_token=token,
        )
    interaction.refresh_from_db(fields=["status", "error", "reflected_at"])
    return interaction
