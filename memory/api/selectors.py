"""Reads of the agent API. Each runs a fixed number of queries whatever the size of the memory."""

from django.core.cache import cache
from django.db import connection
from django.db.models import Prefetch

from memory import context_cache
from memory.models import Change, Lesson, LessonRef, Memory
from memory.pipeline.prompts import CONTEXT_USAGE
from memory.selectors import compile_memory
from personas.models import Project

def _refs_prefetch():
    return Prefetch("refs", queryset=LessonRef.objects.order_by("position", "id"))



def memory_lookup(persona_id, project_slug):
    """The memory of a persona in the project with that slug, or None: from the cache when it may be
    trusted (see `memory.context_cache`), else one indexed query.

    Hand-written because it runs on every context read, where the ORM's query building would
    cost more than serving the cached text. The instance carries what compiling needs (id,
    version, budgets) and is only read, never saved.
    """
    row = context_cache.memory_get(persona_id, project_slug)
    if row is None:
        qn = connection.ops.quote_name
        sql = (
            f"SELECT m.id, m.project_id, m.version, m.core_char_budget, m.working_char_budget "
            f"FROM {qn(Memory._meta.db_table)} m JOIN {qn(Project._meta.db_table)} pr ON pr.id = m.project_id "
            f"WHERE m.persona_id = %s AND pr.slug = %s"
        )
        with connection.cursor() as cursor:
            cursor.execute(sql, [persona_id, project_slug])
            row = cursor.fetchone()
        if row is None:
            return None
        context_cache.memory_set(persona_id, project_slug, row, project_id=row[1])
    memory_id, project_id, version, core_budget, working_budget = row
    return Memory(id=memory_id, persona_id=persona_id, project_id=project_id, version=version,
                  core_char_budget=core_budget, working_char_budget=working_budget)


def context_payload(memory):
    """The compiled memory with the ids of the lessons in it; cached per memory version."""
    key = "nw:context-json:" + context_cache.compiled_key(memory)
    payload = cache.get(key)
    if payload is not None:
        return payload
    compiled = compile_memory(memory)
    kept = compiled.core_kept + compiled.working_kept
    lessons = {
        lesson.pk: lesson
        for lesson in Lesson.objects.filter(pk__in=kept).prefetch_related(_refs_prefetch())
    }
    payload = {
        "version": memory.version,
        "text": compiled.text,
        "lessons": [
            {
                "id": pk,
                "tier": lessons[pk].tier,
                "category": lessons[pk].category,
                "text": lessons[pk].text,
                "refs": [ref.as_text() for ref in lessons[pk].refs.all()],
            }
            for pk in kept
        ],
        "cut_lesson_ids": compiled.core_cut + compiled.working_cut,
    }
    payload["usage"] = CONTEXT_USAGE
    payload["text_with_ids"] = text_with_ids(payload["lessons"])
    cache.set(key, payload, timeout=context_cache.COMPILED_SECONDS)
    return payload


def text_with_ids(lessons):
    """The compiled lessons with their ids, under the usage instructions, for agents that recall."""
    parts = [CONTEXT_USAGE.replace("\n", " "), ""]
    for tier, title in (("core", "## Core Lessons"), ("working", "## Working Memory")):
        rows = [l for l in lessons if l["tier"] == tier]
        if rows:
            parts.append(title)
            for l in rows:
                tag = f"[{l['category']}] " if l["category"] else ""
                refs = f" (ref: {', '.join(l['refs'])})" if l["refs"] else ""
                parts.append(f"- [{l['id']}] {tag}{l['text']}{refs}")
            parts.append("")
    return "\n".join(parts).rstrip() + "\n"


def source_entries(lesson):
    """The transcript entries a lesson cites, from the interaction it came from."""
    if not lesson.source_entry_ids or lesson.interaction is None:
        return []
    wanted = set(lesson.source_entry_ids)
    return [e for e in lesson.interaction.transcript or [] if isinstance(e, dict) and str(e.get("id")) in wanted]


def lesson_list(memory, *, path=None, category=None, tier=None, limit=50, offset=0):
    qs = Lesson.objects.filter(memory=memory).active()
    if path:
        qs = qs.touching_path(path)
    if category:
        qs = qs.filter(category=category)
    if tier:
        qs = qs.filter(tier=tier)
    count = qs.count()
    items = list(qs.order_by("id").prefetch_related(_refs_prefetch())[offset: offset + limit])
    return count, items


def lesson_for_recall(lesson_id):
    return (
        Lesson.objects.select_related("memory__persona", "memory__project", "interaction")
        .prefetch_related(
            _refs_prefetch(),
            "derived_from",
            "confirmations",
            Prefetch(
                "changes",
                queryset=Change.objects.select_related("batch", "batch__actor_user").order_by("id"),
            ),
        )
        .filter(pk=lesson_id)
        .first()
    )
