"""Readable addresses of a memory: /memories/<persona name>/<project slug>/, as the agent API names it.

Links are resolved by the current names; a link pasted into a review before a rename still opens the
memory (the former name is kept as an alias and redirects); the old numeric addresses redirect here.
"""

from django.http import Http404
from django.shortcuts import redirect

from memory.access import memory_for_user_or_404, visible_memories
from memory.lessons.paths import addressable, memory_path
from memory.models import Memory
from personas.models import PersonaAlias


def resolve_memory(request, tab, *, persona=None, project=None, memory_id=None):
    """(memory, None) for the page to render, or (None, redirect) to the memory's readable address:
    from an old numeric link, or from a former or differently cased persona name."""
    if memory_id is not None:
        memory = memory_for_user_or_404(request.user, pk=memory_id)
    else:
        memory = memory_by_names(persona, project, user=request.user)
        if memory.persona.name == persona:
            return memory, None
    if memory_id is not None and not addressable(memory):
        return memory, None
    target = memory_path(memory, tab)
    query = request.META.get("QUERY_STRING")
    return None, redirect(f"{target}?{query}" if query else target, permanent=memory_id is not None)


def memory_by_names(persona_name, project_slug, *, user=None):
    """The memory at these names (persona case-insensitive) that `user` may see, or Http404."""
    memories = Memory.objects.select_related("persona", "project")
    if user is not None:
        memories = visible_memories(user).select_related("persona", "project")
    memory = memories.filter(persona__name__iexact=persona_name, project__slug=project_slug).first()
    if memory is None:
        memory = _by_alias(memories, persona_name, project_slug)
    if memory is None:
        raise Http404("No memory of that persona and project")
    return memory


def _by_alias(memories, persona_name, project_slug):
    """A persona renamed since the link was made: its former names are kept as aliases."""
    alias = PersonaAlias.objects.filter(name__iexact=persona_name).first()
    if alias is None:
        return None
    return memories.filter(persona_id=alias.persona_id, project__slug=project_slug).first()
