"""A memory's readable address, built from its names alone (no model import: models use it)."""

from django.urls import reverse

# Each tab of the memory page and its URL name.
TABS = {"lessons": "memory_detail", "history": "memory_history", "prompt": "prompt_preview"}


def addressable(memory):
    """A name holding "/" cannot be one path segment; such a memory keeps its numeric address."""
    return "/" not in memory.persona.name and "/" not in memory.project.slug


def memory_path(memory, tab="lessons"):
    if addressable(memory):
        return reverse(TABS[tab], kwargs={"persona": memory.persona.name, "project": memory.project.slug})
    return reverse(TABS[tab], kwargs={"memory_id": memory.pk})
