"""Reads of the agent API. Each runs a fixed number of queries whatever the size of the memory."""

from typing import Any

from django.core.cache import cache
from django.core.exceptions import ValidationError
from django.db import connection
from django.db.models import Prefetch
from django.db.models.base import ModelState

from memory import context_cache
from memory.conflicts import CONFLICT_MARK
from memory.formats.lines import id_line
from memory.models import Change, Interaction, Lesson, LessonRef, Memory, RefStatus
from memory.pipeline.prompts import CONTEXT_USAGE
from memory.search.selectors import ranked_for_memory
from memory.selectors import compile_memory, unexpired
from memory.textcheck import MAX_ID, text_problem
from personas.models import Persona, PersonaAlias, Project

CACHE_SECONDS = 24 * 3600


# --- scope: what a token may reach (the API answers 403 / 404, the MCP server a tool error) ----


class OutOfScope(Exception):
    """The thing exists but this token may not reach it."""


class NotFound(Exception):
    """No such persona, project, lesson or interaction."""


def _real_name(name, what):
    """A name holding control characters names nothing (names are checked when made): NotFound before any query."""
    if text_problem(name):
        raise NotFound(f"no {what} named {name[:100]!r}")


def persona_in_scope(token, name):
    """The token's persona id when `name` is its own persona's name or one of its old names (kept on
    rename, so agents configured before a rename keep working)."""
    _real_name(name, "persona")
    if token.persona_name.casefold() == name.casefold():
        return token.persona_id
    if Persona.objects.not_archived().filter(name__iexact=name).exists():
        raise OutOfScope(f"this token cannot reach the memory of persona {name!r}")
    alias = PersonaAlias.objects.filter(name__iexact=name).values_list("persona_id", flat=True).first()
    if alias == token.persona_id:
        return token.persona_id
    if alias is not None:
        raise OutOfScope(f"this token cannot reach the memory of persona {name!r}")
    raise NotFound(f"no persona named {name!r}")


def project_in_scope(token, slug):
    _real_name(slug, "project")
    project = Project.objects.filter(slug=slug).first()
    if project is None:
        raise NotFound(f"no project with slug {slug!r}")
    if token.project_id and token.project_id != project.pk:
        raise OutOfScope(f"this token is limited to project {token.project_slug!r}")
    return project


def write_scope(token, persona_name, project_slug):
    """(persona, project) a write may go to."""
    persona_in_scope(token, persona_name)
    return token.persona, project_in_scope(token, project_slug)


def read_scope(token, persona_name, project_slug):
    """(persona id, project slug, memory) for a read: one query when the memory exists.

    A memory with no lesson yet is returned unsaved (pk None): it compiles to "".
    """
    persona_id = persona_in_scope(token, persona_name)
    _real_name(project_slug, "project")
    memory = memory_lookup(persona_id, project_slug)
    if memory is None:
        project = project_in_scope(token, project_slug)
        return persona_id, project.slug, Memory(persona_id=persona_id, project=project, version=0)
    if token.project_id and memory.project_id != token.project_id:
        raise OutOfScope(f"this token is limited to project {token.project_slug!r}")
    return persona_id, project_slug, memory


def readable_projects(token):
    """The projects whose memory the token may read: its one project, or every project."""
    projects = Project.objects.order_by("slug")
    return projects.filter(pk=token.project_id) if token.project_id else projects


def check_memory_scope(token, memory, what):
    if memory.persona_id != token.persona_id:
        raise OutOfScope(f"this {what} belongs to another persona's memory")
    if token.project_id and memory.project_id != token.project_id:
        raise OutOfScope(f"this token is limited to project {token.project_slug!r}")


def _refs_prefetch():
    return Prefetch("refs", queryset=LessonRef.objects.select_related("anchor").order_by("position", "id"))


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
    return _memory_from_row(persona_id, row)


_MEMORY_ROW = ("id", "project_id", "version", "core_char_budget", "working_char_budget")


def _memory_from_row(persona_id, row):
    """A saved Memory holding the row's columns, every other field deferred (read on access, as after
    `.only()`). Built without `Model.__init__`, which costs more than the rest of a cached context
    read; Memory has no pre_init/post_init receivers to skip."""
    memory = Memory.__new__(Memory)
    state = ModelState()
    state.adding, state.db = False, connection.alias
    memory._state = state
    memory.__dict__.update(zip(_MEMORY_ROW, row), persona_id=persona_id)
    return memory


def context_payload(memory):
    """The compiled memory with the ids of the lessons in it; cached per memory version."""
    if memory.pk is None:
        return {
            "version": 0,
            "text": "",
            "lessons": [],
            "cut_lesson_ids": [],
            "usage": CONTEXT_USAGE,
            "text_with_ids": "",
        }
    key = "nw:context-json:" + context_cache.compiled_key(memory)
    payload = cache.get(key)
    if payload is not None:
        return payload
    compiled = compile_memory(memory)
    kept = compiled.core_kept + compiled.working_kept
    lessons = {lesson.pk: lesson for lesson in Lesson.objects.filter(pk__in=kept).prefetch_related(_refs_prefetch())}
    payload = {
        "version": memory.version,
        "text": compiled.text,
        "lessons": [
            {
                "id": pk,
                "tier": lessons[pk].tier,
                "category": lessons[pk].category,
                "text": lessons[pk].text + (f" {CONFLICT_MARK}" if pk in compiled.disputed else ""),
                "refs": [ref.as_text() for ref in lessons[pk].refs.all()],
                "stale_refs": [
                    ref.as_text()
                    for ref in lessons[pk].refs.all()
                    if ref.anchor is not None and ref.anchor.needs_review
                ],
                "expires_on": lessons[pk].expires_on,
                "expires_when": lessons[pk].expires_when,
            }
            for pk in kept
        ],
        "cut_lesson_ids": compiled.core_cut + compiled.working_cut,
    }
    payload["usage"] = CONTEXT_USAGE
    payload["text_with_ids"] = text_with_ids(payload["lessons"])
    cache.set(key, payload, timeout=context_cache.COMPILED_SECONDS)
    return payload


def text_with_ids(lessons, usage=CONTEXT_USAGE):
    """The compiled lessons with their ids, under the usage instructions, for agents that recall."""
    parts = [usage.replace("\n", " "), ""]
    for tier, title in (("core", "## Core Lessons"), ("working", "## Working Memory")):
        rows = [lesson for lesson in lessons if lesson["tier"] == tier]
        if rows:
            parts.append(title)
            parts.extend(lesson_line(lesson) for lesson in rows)
            parts.append("")
    return "\n".join(parts).rstrip() + "\n"


def lesson_line(lesson: dict[str, Any]) -> str:
    """`- [id] [CATEGORY] text (ref: a, b)` for a lesson dict whose refs are texts; the refs listed in
    its `stale_refs` are marked as compiled memory marks them (the grammar of memory/formats/lines.py)."""
    return id_line(lesson["id"], lesson["category"], lesson["text"], lesson["refs"], lesson.get("stale_refs", ()))


def source_entries(lesson):
    """The transcript entries a lesson cites, from the interaction it came from."""
    if not lesson.source_entry_ids or lesson.interaction is None:
        return []
    wanted = set(lesson.source_entry_ids)
    return [e for e in lesson.interaction.transcript or [] if isinstance(e, dict) and str(e.get("id")) in wanted]


def lesson_list(memory, *, path=None, category=None, tier=None, words=None, limit=50, offset=0):
    """(count, lessons) of the active lessons matching the filters; a memory not saved yet has none.

    Expired lessons are left out, as compiled memory leaves them out: an agent is not served them
    by a search either (recall still shows one by id)."""
    if path is not None and (not path.strip() or ".." in path.split("/") or text_problem(path)):
        raise ValidationError({"path": ["path must be a file or folder inside the project"]})
    if words and text_problem(words):
        raise ValidationError({"words": [f"words {text_problem(words)}"]})
    if memory.pk is None:
        return 0, []
    qs = Lesson.objects.filter(unexpired(), memory=memory).active()
    if path:
        qs = qs.touching_path(path)
    if category:
        qs = qs.filter(category=category)
    if tier:
        qs = qs.filter(tier=tier)
    # Words go through the search index (memory/search), best match first; without words, by id.
    qs = ranked_for_memory(qs, words) if words and words.strip() else qs.order_by("id")
    count = qs.count()
    items = list(qs.prefetch_related(_refs_prefetch())[offset : offset + limit])
    return count, items


def lesson_page(memory, *, path=None, category=None, tier=None, words=None, limit=50, offset=0):
    count, items = lesson_list(memory, path=path, category=category, tier=tier, words=words, limit=limit, offset=offset)
    next_offset = offset + limit
    return {
        "count": count,
        "limit": limit,
        "offset": offset,
        "next_offset": next_offset if next_offset < count else None,
        "items": [lesson_out(lesson) for lesson in items],
    }


def _ref_out(ref, project=None):
    anchor = ref.anchor if ref.anchor_id else None
    commit = anchor.commit if anchor is not None and anchor.commit else None
    return {
        "path": ref.path,
        "start_line": ref.start_line,
        "end_line": ref.end_line,
        "text": ref.as_text(),
        "status": anchor.status if anchor is not None else RefStatus.UNANCHORED,
        "verified_commit": commit,
        "proposed": (anchor.proposed_text or None) if anchor is not None else None,
        "note": anchor.note if anchor is not None else "",
        "permalink": project.permalink(ref.path, ref.start_line, ref.end_line, commit=commit) if project else None,
    }


def lesson_out(lesson, project=None):
    """An API lesson; with `project` (loaded already), each ref carries its permalink."""
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
        "expires_on": lesson.expires_on,
        "expires_when": lesson.expires_when,
        "refs": [_ref_out(r, project) for r in lesson.refs.all()],
    }


def recall_payload(token, lesson_id):
    """One lesson in the token's scope with its provenance and history."""
    lesson = lesson_for_recall(lesson_id) if 0 < lesson_id <= MAX_ID else None
    if lesson is None:
        raise NotFound(f"no lesson {lesson_id}")
    check_memory_scope(token, lesson.memory, "lesson")
    interaction = lesson.interaction
    return {
        **lesson_out(lesson, lesson.memory.project),
        "persona": lesson.memory.persona.name,
        "project": lesson.memory.project.slug,
        "source_entries": source_entries(lesson),
        "interaction": None
        if interaction is None
        else {
            "id": interaction.pk,
            "trigger_type": interaction.trigger_type,
            "outcome": interaction.outcome,
            "summary": interaction.summary,
            "created_at": interaction.created_at,
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
                "id": c.pk,
                "action": c.action,
                "at": c.created_at,
                "actor": c.batch.actor_display,
                "batch_id": c.batch_id,
                "batch_kind": c.batch.kind,
                "reason": c.batch.reason,
                "before": c.before,
                "after": c.after,
                "reverted": c.reverted_by_id is not None,
            }
            for c in lesson.changes.all()
        ],
    }


def lesson_for_write(token, lesson_id):
    """A lesson the token may change, with its memory: one query. NotFound or OutOfScope otherwise."""
    lesson = Lesson.objects.select_related("memory").filter(pk=lesson_id).first() if 0 < lesson_id <= MAX_ID else None
    if lesson is None:
        raise NotFound(f"no lesson {lesson_id}")
    check_memory_scope(token, lesson.memory, "lesson")
    return lesson


def expiry_set_out(lesson):
    """What setting an expiry answers: the lesson as it is now (refs and their anchors read) and the memory's version."""
    lesson = Lesson.objects.select_related("memory").prefetch_related(_refs_prefetch()).get(pk=lesson.pk)
    return {**lesson_out(lesson), "version": lesson.memory.version}


def appended_out(memory, results):
    """What an append answers: each lesson with created or confirmed, and the new memory version."""
    return {
        "lessons": [
            {
                "id": lesson.pk,
                "status": status,
                "tier": lesson.tier,
                "category": lesson.category,
                "text": lesson.text,
                "expires_on": lesson.expires_on,
                "expires_when": lesson.expires_when,
            }
            for lesson, status in results
        ],
        "version": memory.version,
    }


def interaction_out(interaction, lesson_ids=()):
    return {
        "id": interaction.pk,
        "status": interaction.status,
        "error": interaction.error,
        "lesson_ids": list(lesson_ids),
        "created_at": interaction.created_at,
        "reflected_at": interaction.reflected_at,
    }


def interaction_status(token, interaction_id):
    if not 0 < interaction_id <= MAX_ID:
        raise NotFound(f"no interaction {interaction_id}")
    interaction = (
        Interaction.objects.select_related("memory").prefetch_related("lessons").filter(pk=interaction_id).first()
    )
    if interaction is None:
        raise NotFound(f"no interaction {interaction_id}")
    check_memory_scope(token, interaction.memory, "interaction")
    return interaction_out(interaction, [lesson.pk for lesson in interaction.lessons.all()])


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
