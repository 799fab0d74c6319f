from django.template.response import TemplateResponse

from memory.lessons.addressing import resolve_memory
from memory.lessons.selectors import budget_state
from memory.roles import viewer_required
from memory.selectors import WORKING_HEADING, compiled_memory_text
from personas.compiler import compile_system_prompt, persona_sections


def _label(section, index, persona):
    if persona.system_prompt_override.strip():
        return "System prompt override"
    if index == 0:
        return "Identity"
    first = section.splitlines()[0]
    return first.lstrip("#").strip() if first.startswith("## ") else f"Section {index + 1}"


def prompt_sections(persona, memory_text):
    """(label, text) for each part of the compiled prompt, in the order the agent reads them."""
    sections = [(_label(s, i, persona), s) for i, s in enumerate(persona_sections(persona))]
    if memory_text.strip():
        core, _, working = memory_text.partition(WORKING_HEADING)
        sections.append(("Core Lessons", core.rstrip("\n")))
        if working:
            sections.append(("Working Memory", (WORKING_HEADING + working).rstrip("\n")))
    return sections


@viewer_required
def prompt_preview(request, **address):
    memory, moved = resolve_memory(request, "prompt", **address)
    if moved:
        return moved
    memory_text = compiled_memory_text(memory)
    prompt = compile_system_prompt(memory.persona, memory_text)
    budget = budget_state(memory)
    sections = [{"label": label, "chars": len(text)} for label, text in prompt_sections(memory.persona, memory_text)]
    context = {
        "memory": memory,
        "prompt": prompt,
        "sections": sections,
        "total_chars": len(prompt),
        "budget": budget,
        "cut_count": len(budget.cut_ids),
    }
    return TemplateResponse(request, "memory/lessons/prompt_preview.html", context)
