"""The text a refinement run sends: fixed safety rules, the persona's own guidance, the ledger.

The safety rules are product code and cannot be edited from any page or API; the persona part
is edited by approvers (versioned). Every rule stated here is also enforced by the session
handler, so the prompt only steers the model — it never carries the guarantee alone.
"""

from memory.models import REFINEMENT_OP_CAP, Lesson, LessonStatus, Tier

SAFETY_RULES = f"""\
## Ground rules (fixed; they apply to every agent)
- Your only job is to remove duplication. Two lessons are duplicates only when they record the same specific fact, decision, failure or fix. Lessons that are merely similar, or about the same file or feature, are not duplicates: leave them alone.
- You may make at most {REFINEMENT_OP_CAP} changing actions (consolidate, update, delete, protect) in this session. Anything beyond that is refused. Small careful steps over many sessions are the goal, never a single sweep.
- Lessons marked protected are untouchable: they cannot be consolidated, edited or deleted.
- Exact details are fixed: error messages, commands, configuration values, numbers, versions, file paths and line ranges stay word for word unless another lesson repeats them word for word.
- Decisions and agreements (what the team or the user chose, asked for or ruled out, with the reason and the date) are fixed in the same way: never combine two decisions because they touch the same area.
- When you consolidate, the new text must keep everything each of the combined lessons said. Only what the new text keeps counts as retained; a consolidation that drops details counts as deleting them.
- Deleting is rare. Prefer leaving a lesson as it is. Tightening the wording of a single lesson is allowed when no meaning is lost.
- If the memory would keep less than its retention threshold, the whole session is undone and stopped.
- Finishing with zero changes is a successful session. When in doubt, call `complete` without changing anything."""

DEFAULT_PERSONA_GUIDANCE = """\
Only de-duplicate. Treat a lesson as redundant only when another lesson already holds the very same moment, quote or insight. You may tighten the wording inside one lesson. If you are not sure, change nothing; ending with no changes at all is the preferred outcome."""

CONSENT_QUESTION = f"""\
A refinement session for your core memory is about to start. In it you may de-duplicate lessons and tighten their wording; deleting is rare, and at most {REFINEMENT_OP_CAP} changes are allowed. Ending the session with zero changes is a perfectly good result.

Do you agree to start this session? Answer with one word: YES or NO."""

REFINEMENT_SYSTEM = (
    "You maintain an AI agent's long-term memory with the tools provided. You are careful and "
    "conservative: you de-duplicate, you do not summarise."
)

TOOLS_HELP = """\
## Tools
- search(query): find lessons by words.
- consolidate(ids, text): replace two or more duplicate lessons by one lesson with the given text.
- update(id, text): tighten the wording of one lesson.
- delete(id, reason): remove a lesson (rare).
- protect(id): mark a lesson as protected.
- complete(summary): end the session (zero changes is fine)."""


def persona_guidance(persona):
    return (persona.refinement_prompt or "").strip() or DEFAULT_PERSONA_GUIDANCE


def ledger_lessons(memory):
    return list(Lesson.objects.filter(memory=memory, tier=Tier.CORE, status=LessonStatus.ACTIVE).order_by("id"))


def render_ledger(lessons):
    if not lessons:
        return "(no core lessons)"
    lines = []
    for lesson in lessons:
        flag = " (protected)" if lesson.protected else ""
        lines.append(f"- id {lesson.pk} [{lesson.category or 'UNTAGGED'}]{flag}: {lesson.text}")
    return "\n".join(lines)


def build_refinement_prompt(persona, memory, *, guidance=None, lessons=None):
    """The full prompt a run sends: rules, then the persona's guidance (or default), then the ledger."""
    guidance = (guidance if guidance is not None else persona.refinement_prompt or "").strip()
    guidance = guidance or DEFAULT_PERSONA_GUIDANCE
    if lessons is None:
        lessons = ledger_lessons(memory) if memory is not None else []
    ledger = render_ledger(lessons)
    return (
        f"{SAFETY_RULES}\n\n## Guidance for {persona.name}\n{guidance}\n\n{TOOLS_HELP}\n\n"
        f"## Core memory ledger ({len(lessons)} lessons)\n{ledger}\n"
    )


def build_consent_prompt():
    return CONSENT_QUESTION


def consent_given(answer):
    """Only a clear YES starts the session; anything else (NO, maybe, empty, an essay) declines."""
    words = (answer or "").strip().strip("*_`\"'").split()
    if not words:
        return False
    first = words[0].strip(".!,:;*_`\"'").upper()
    return first == "YES" and len(words) <= 3
