"""The reflection prompt: a role-flavoured framing, what happened, and the rules for the answer.

The framing depends on the persona's role (implementer, tech lead, QA, security, or a generic one
built from the role text); a persona's own `reflection_prompt` replaces the framing. The context
and the answer rules are always the same, so every answer can be parsed the same way.
"""

import re

MIN_BULLETS = 1
MAX_BULLETS = 5

CATEGORY_GUIDE = [
    ("PATTERN", "a convention or recurring shape in the code that you discovered"),
    ("DECISION", "a design choice that was made, together with the reason for it"),
    ("ARCHITECTURE", "how parts of the system fit together: boundaries, data flow, who owns what"),
    ("OBSERVATION", "something you noticed that may matter later"),
    ("HYPOTHESIS", "a suspicion about a possible problem that nobody has verified yet"),
    ("TODO", "a concrete follow-up action somebody should take"),
]

GOOD_EXAMPLES = [
    "- [PATTERN] Every billing view reloads the invoice with select_for_update before it changes the status "
    "(ref: billing/views.py#L40-L58)",
    "- [DECISION] Webhook payloads are stored raw before parsing, so a parser bug can be replayed from the "
    "archive (ref: hooks/store.py#L12-L30)",
    "- [OBSERVATION] export_orders() pages through orders 500 at a time without an ORDER BY, so pages can "
    "overlap (ref: jobs/export.py#L71-L80)",
]

BAD_EXAMPLES = [
    "- Error handling could be better",
    "- More tests are needed",
    "- Keep security in mind",
]

# Role families, matched against the persona's role text. The first family that matches wins, so
# "Security Reviewer" is security (not a tech-lead reviewer) and "QA Engineer" is QA (not an implementer).
ROLE_FAMILIES = [
    ("security", re.compile(r"secur|appsec|pentest|threat", re.I)),
    ("qa", re.compile(r"\bqa\b|quality|\btest", re.I)),
    ("tech_lead", re.compile(r"tech(nical)?[\s-]*lead|architect|reviewer|staff engineer|principal", re.I)),
    ("implementer", re.compile(r"implement|develop|\bdev\b|engineer|programmer|coder|executor", re.I)),
]

FRAMINGS = {
    "implementer": (
        "You are {name}. You just implemented work on {project}. Think like a developer who does not want to "
        "trip over the same thing twice: which file conventions, pitfalls, and approaches that worked or "
        "failed should you keep for next time?"
    ),
    "tech_lead": (
        "You are {name}. You just reviewed work on {project}. Think like a tech lead who keeps track of how the "
        "team builds: which architecture decisions, recurring review findings and lessons about how the work "
        "was split up should you keep?"
    ),
    "qa": (
        "You are {name}. You just tested work on {project}. Think like a QA engineer building up the team's "
        "testing knowledge: which coverage gaps, flaky behaviour, edge cases and testing conventions should "
        "you keep?"
    ),
    "security": (
        "You are {name}. You just went over work on {project} looking for security problems. Think like a "
        "security reviewer who tracks threats over time: which auth and session weaknesses, risky "
        "dependencies, injection points and safe patterns should you keep?"
    ),
}

GENERIC_FRAMING = (
    "You are {name}, {role}. You just took part in work on {project}. Think the way {role_article} {role_lower} "
    "would: what from this interaction should you keep so that you do better next time?"
)


def role_family(role):
    for family, pattern in ROLE_FAMILIES:
        if pattern.search(role or ""):
            return family
    return "generic"


def _article(phrase):
    first = phrase.split()[0] if phrase.split() else "a"
    if len(first) > 1 and first.isupper():  # an acronym is read letter by letter: "an SRE", "a QA lead"
        return "an" if first[0] in "AEFHILMNORSX" else "a"
    return "an" if first[:1].lower() in "aeiou" else "a"


def framing_for(persona, project_name):
    custom = (persona.reflection_prompt or "").strip()
    if custom:
        return custom
    family = role_family(persona.role)
    if family in FRAMINGS:
        return FRAMINGS[family].format(name=persona.name, project=project_name)
    role = (persona.role or "").strip()
    if not role:
        return GENERIC_FRAMING.format(
            name=persona.name,
            role="a member of the team",
            project=project_name,
            role_article="a",
            role_lower="team member",
        )
    # "Data Scientist" reads as "a data scientist"; acronyms such as "SRE" keep their capitals.
    role_lower = " ".join(word if word.isupper() else word.lower() for word in role.split())
    return GENERIC_FRAMING.format(
        name=persona.name, role=role, project=project_name, role_article=_article(role_lower), role_lower=role_lower
    )


def context_block(interaction):
    files = [str(f) for f in (interaction.files_changed or []) if str(f).strip()]
    lines = [
        "What happened:",
        f"- Trigger: {interaction.trigger_type}",
        f"- Outcome: {interaction.outcome or 'not reported'}",
        "- Files changed: " + (", ".join(files) if files else "none reported"),
        "",
        "Summary:",
        interaction.summary.strip(),
    ]
    return "\n".join(lines)


def rules_block():
    lines = [
        f"Answer with {MIN_BULLETS} to {MAX_BULLETS} bullets and nothing else: no introduction, no closing words. "
        "Every bullet has exactly this shape:",
        "- [CATEGORY] lesson (ref: path/to/file.py#L10-L24)",
        "",
        "CATEGORY is one of:",
        *(f"- {name}: {meaning}" for name, meaning in CATEGORY_GUIDE),
        "",
        "GOOD lessons name the file, function, setting or number they are about:",
        *GOOD_EXAMPLES,
        "",
        "BAD lessons are too vague for anyone to act on. Never write lessons like these:",
        *BAD_EXAMPLES,
        "",
        "When you do not know the exact file or lines, leave out the (ref: ...) part, but still name the most "
        "specific place you can.",
    ]
    return "\n".join(lines)


def build_reflection_prompt(interaction, *, persona=None, project=None):
    memory = interaction.memory
    persona = persona or memory.persona
    project = project or memory.project
    return (
        "\n\n".join(
            [
                framing_for(persona, project.name),
                context_block(interaction),
                "Write down what you should remember from this for your next interaction on this project.",
                rules_block(),
            ]
        )
        + "\n"
    )
