"""Shared helpers of the compaction tests: a scripted engine and snapshots of the whole memory."""

from memory.engines.base import Completion, EngineError
from memory.formats.lines import render_core, render_working
from memory.models import Lesson, Memory
from memory.selectors import active_lessons, with_refs


class ScriptedEngine:
    """An engine whose `complete` returns prepared text and remembers what it was asked."""

    provider = "scripted"

    def __init__(self, text="", error=None):
        self.text = text
        self.error = error
        self.calls = []

    def complete(self, *, system, prompt, purpose, max_tokens=None):
        self.calls.append({"system": system, "prompt": prompt, "purpose": purpose, "max_tokens": max_tokens})
        if self.error:
            raise EngineError(self.error)
        return Completion(text=self.text, model="scripted-1")


def memory_state(memory):
    """Rendered core.md and working.md, the version, and every lesson row: what 'untouched' means."""
    memory = Memory.objects.get(pk=memory.pk)
    rows = sorted(
        (
            lesson.pk,
            lesson.tier,
            lesson.text,
            lesson.category,
            lesson.status,
            lesson.superseded_by_id,
            tuple(r.as_text() for r in lesson.refs.all()),
        )
        for lesson in Lesson.objects.filter(memory=memory).prefetch_related("refs")
    )
    return {
        "core": render_core(with_refs(active_lessons(memory, "core"))),
        "working": render_working(with_refs(active_lessons(memory, "working"))),
        "version": memory.version,
        "rows": rows,
    }


def working_set(memory):
    """(id, text, category, status, refs) of every active working lesson."""
    return {
        (lesson.pk, lesson.text, lesson.category, lesson.status, tuple(r.as_text() for r in lesson.refs.all()))
        for lesson in active_lessons(memory, "working")
    }
