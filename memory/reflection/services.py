"""Reflection: an interaction becomes 1–5 working lessons (or confirmations of lessons already known)."""

import logging
import re
from collections.abc import Sequence
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from memory import services
from memory.engines.base import EngineError
from memory.engines.registry import get_engine
from memory.jobs import enqueue_on_commit
from memory.models import AgentToken, ChangeBatch, Interaction, Memory
from memory.reflection.parsing import ParsedLesson, ReflectionParseError, is_vague, parse_reflection
from memory.reflection.prompts import build_reflection_prompt
from memory.refs import Ref, parse_ref
from memory.services import MAX_LESSON_CHARS
from memory.textcheck import check_text
from personas.compiler import compile_system_prompt

log = logging.getLogger(__name__)

REFLECTION_PURPOSE = "reflection"


@transaction.atomic
def interaction_create(
    *,
    memory: Memory,
    trigger_type: str,
    summary: str,
    outcome: str = "",
    files_changed: Sequence[str] = (),
    transcript: Sequence[dict[str, Any]] = (),
    agent_token: AgentToken | None = None,
) -> Interaction:
    """Record what happened and reflect on it once the transaction commits."""
    trigger_type = check_text(trigger_type, field="trigger_type")
    outcome = check_text(outcome or "", field="outcome")
    summary = check_text(summary, field="summary", multiline=True)
    for ref in files_changed:
        check_text(ref, field="files_changed")
    for i, entry in enumerate(transcript):
        for key in ("id", "role", "at"):
            check_text(str(entry.get(key) or ""), field=f"transcript.{i}.{key}")
        entry["text"] = check_text(str(entry.get("text") or ""), field=f"transcript.{i}.text", multiline=True)
    interaction = Interaction.objects.create(
        memory=memory,
        trigger_type=trigger_type,
        outcome=outcome,
        summary=summary,
        files_changed=list(files_changed),
        transcript=list(transcript),
        agent_token=agent_token,
    )
    enqueue_on_commit("memory.reflection.reflect_interaction", interaction.pk)
    return interaction


def offline_reflection(interaction: Interaction) -> list[ParsedLesson]:
    """No model: the summary itself is the lesson, as one OBSERVATION pointing at the changed files."""
    text = re.sub(r"\s+", " ", interaction.summary).strip()
    if len(text) > MAX_LESSON_CHARS:
        text = text[: MAX_LESSON_CHARS - 1].rstrip() + "…"
    refs: list[Ref] = []
    for item in interaction.files_changed or []:
        try:
            refs.append(parse_ref(str(item)))
        except ValidationError:
            continue  # a file name that is not a valid ref is still in the interaction, just not linked
    return [ParsedLesson(category="OBSERVATION", text=text, refs=refs, vague=is_vague(text, refs))]


def interaction_mark_failed(*, interaction_id: int, error: object) -> None:
    """Record why reflection failed; an interaction already reflected is left as it is."""
    Interaction.objects.filter(pk=interaction_id, status=Interaction.Status.PENDING).update(
        status=Interaction.Status.FAILED, error=str(error)[:4000], reflected_at=timezone.now()
    )


def interaction_reflect(*, interaction_id: int) -> list[int]:
    """Reflect on one interaction. Idempotent: an interaction already reflected (or failed) is left alone.

    Returns the list of new lesson ids. The model call happens outside any transaction; the store
    is one transaction with one change batch of kind reflection.
    """
    interaction = Interaction.objects.select_related("memory__persona", "memory__project").get(pk=interaction_id)
    if interaction.status != Interaction.Status.PENDING:
        return []
    memory = interaction.memory
    persona = memory.persona
    try:
        engine = get_engine(persona, memory=memory)
        if engine.provider == "offline":
            lessons = offline_reflection(interaction)
        else:
            from memory.selectors import compiled_memory_text

            completion = engine.complete(
                system=compile_system_prompt(persona, compiled_memory_text(memory)),
                prompt=build_reflection_prompt(interaction),
                purpose=REFLECTION_PURPOSE,
            )
            lessons = parse_reflection(completion.text)
    except (EngineError, ReflectionParseError) as exc:
        log.warning("reflection of interaction %s failed: %s", interaction_id, exc)
        interaction_mark_failed(interaction_id=interaction_id, error=exc)
        return []
    try:
        return _store(interaction_id, lessons)
    except ValidationError as exc:
        interaction_mark_failed(interaction_id=interaction_id, error="; ".join(exc.messages))
        return []


@transaction.atomic
def _store(interaction_id: int, parsed: list[ParsedLesson]) -> list[int]:
    interaction = Interaction.objects.select_for_update().get(pk=interaction_id)
    if interaction.status != Interaction.Status.PENDING:
        return []  # another worker got here first
    # Lock the memory so two reflections cannot both add the same new lesson.
    memory = Memory.objects.select_for_update().get(pk=interaction.memory_id)
    results = services.lessons_append_or_confirm(
        memory=memory,
        actor=services.Actor.job(f"reflection of interaction #{interaction.pk}"),
        kind=ChangeBatch.Kind.REFLECTION,
        label=f"Reflection on {interaction.trigger_type}",
        reason=f"Interaction #{interaction.pk}: {interaction.summary[:200]}",
        interaction=interaction,
        sender=Interaction,
        drafts=[
            services.LessonDraft(text=item.text, category=item.category, refs=item.refs, vague=item.vague)
            for item in parsed
        ],
    )
    created = [lesson.pk for lesson, outcome in results if outcome == "created"]
    now = timezone.now()
    interaction.status = Interaction.Status.REFLECTED
    interaction.error = ""
    interaction.reflected_at = now
    interaction.save(update_fields=["status", "error", "reflected_at"])
    Memory.objects.filter(pk=memory.pk).update(last_reflected_at=now)
    return created
