"""The persona's system prompt: identity, soul, style, skill — then memory, always last."""


def _bullets(value, indent=""):
    """Markdown list items for a list or a mapping, nested lists and mappings indented under their key."""
    lines = []
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, (list, dict)):
                nested = _bullets(item, indent + "  ")
                if nested:
                    lines.append(f"{indent}- {key}:")
                    lines.extend(nested)
            elif str(item).strip():
                lines.append(f"{indent}- {key}: {item}")
    elif isinstance(value, list):
        for item in value:
            if isinstance(item, (list, dict)):
                lines.extend(_bullets(item, indent + "  "))
            elif str(item).strip():
                lines.append(f"{indent}- {item}")
    return lines


def _as_lines(value):
    if isinstance(value, str):
        return [value] if value.strip() else []
    return _bullets(value)


def _section(title, data, labels):
    lines = []
    for key, label in labels:
        body = _as_lines((data or {}).get(key))
        if body:
            lines.append(f"### {label}")
            lines.extend(body)
    if not lines:
        return ""
    return f"## {title}\n" + "\n".join(lines)


SOUL_LABELS = [
    ("whoIAm", "Who I am"),
    ("worldview", "Worldview"),
    ("opinions", "Opinions"),
    ("expertise", "Expertise"),
    ("interests", "Interests"),
    ("tensions", "Tensions"),
    ("boundaries", "Boundaries"),
    ("petPeeves", "Pet peeves"),
]
STYLE_LABELS = [
    ("voicePrinciples", "Voice"),
    ("sentenceStructure", "Sentence structure"),
    ("tone", "Tone"),
    ("wordsUsed", "Words I use"),
    ("wordsAvoided", "Words I avoid"),
    ("emojiUsage", "Emoji"),
    ("quickReactions", "Quick reactions"),
    ("rhetoricalMoves", "Rhetorical moves"),
    ("antiPatterns", "Never do this"),
    ("goodExamples", "Good examples"),
    ("badExamples", "Bad examples"),
]
SKILL_LABELS = [
    ("modes", "Modes"),
    ("interpolationRules", "Interpolation rules"),
    ("additionalInstructions", "Additional instructions"),
]


def persona_sections(persona):
    if persona.system_prompt_override.strip():
        return [persona.system_prompt_override.strip()]
    identity = f"You are {persona.name}" + (f", {persona.role}." if persona.role else ".")
    sections = [
        identity,
        _section("Soul", persona.soul, SOUL_LABELS),
        _section("Style", persona.style, STYLE_LABELS),
        _section("Skill", persona.skill, SKILL_LABELS),
    ]
    return [s for s in sections if s]


def compile_system_prompt(persona, memory_text=""):
    """Persona sections joined by blank lines; compiled memory appended last when there is any."""
    parts = persona_sections(persona)
    if memory_text and memory_text.strip():
        parts.append(memory_text.strip())
    return "\n\n".join(parts) + "\n"


def compile_system_prompt_for(persona, project):
    from memory.selectors import compiled_memory_text, memory_for

    memory = memory_for(persona, project)
    return compile_system_prompt(persona, compiled_memory_text(memory) if memory else "")
