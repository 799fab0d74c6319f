"""Compaction by a language model: the prompt, and the call. The answer is parsed strictly by draft.parse_output."""

from memory.compaction.draft import parse_output

# Sixty lines with refs and id citations do not fit a persona's usual 1024-token reply.
COMPACTION_MAX_TOKENS = 4096

SYSTEM_PROMPT = """\
You condense the working memory of {persona} ({role}) on the project {project}.
Working memory is a list of short lessons the agent wrote for itself while working. It has grown too long.
Produce a shorter list that keeps everything the agent can act on.

How to condense:
- Every output line keeps a category tag: [PATTERN], [DECISION], [ARCHITECTURE], [OBSERVATION], [HYPOTHESIS] or [TODO].
- Code references such as (ref: src/queue/worker.ts#L88-L95) are the most valuable part of a lesson: carry each one
  over exactly as written. A reference may only disappear if you drop every lesson that carries it, on a DROP line.
- When several lessons say the same or closely related things, write one richer line that combines them and cite
  all of them.
- Drop lessons that are vague (no file, function, number or concrete behaviour) or no longer useful.
- Prefer lessons that name specific files, functions, values or patterns.
- Lessons marked protected or critical must be copied unchanged, each on its own line, citing only its own id.
- Write at most {target} lines in total.

Answer format (nothing else: no heading, no preamble, no code fence):
- [CATEGORY] lesson text (ref: path/to/file.ext#L10-L12, other/file.ext#L3) {{ids: 12, 15}}
DROP {{ids: 7, 9}}: why these lessons are left out

Every lesson line ends with {{ids: …}} listing the input lesson ids it comes from. Leave out "(ref: …)" when the
line has no reference. Use only ids that appear in the input.

Example input:
#3 2025-03-02 [OBSERVATION] Retry in the queue worker waits a fixed 1s (ref: src/queue/worker.ts#L88-L95)
#8 2025-03-09 [OBSERVATION] queue worker retry has no backoff, hammered the API during the outage (ref: src/queue/worker.ts#L88-L95)
#11 2025-03-10 [TODO] look into error handling
#14 2025-03-12 [DECISION] Audit log is event-sourced for replay (ref: src/events/store.ts#L5-L15) (protected)

Example answer:
- [OBSERVATION] Queue worker retries after a fixed 1s with no backoff; it hammered the API during an outage (ref: src/queue/worker.ts#L88-L95) {{ids: 3, 8}}
- [DECISION] Audit log is event-sourced for replay (ref: src/events/store.ts#L5-L15) {{ids: 14}}
DROP {{ids: 11}}: too vague to act on
"""


def _input_line(lesson):
    refs = [r.as_text() for r in lesson.refs.all()]
    line = f"#{lesson.pk} {lesson.lesson_date.isoformat()} [{lesson.category or 'UNTAGGED'}] {lesson.text}"
    if refs:
        line += f" (ref: {', '.join(refs)})"
    marks = []
    if lesson.protected:
        marks.append("protected")
    if lesson.relevance == "critical":
        marks.append("critical")
    if lesson.vague:
        marks.append("flagged vague")
    if marks:
        line += f" ({', '.join(marks)})"
    return line


def build_prompts(memory, lessons, target):
    persona = memory.persona
    limit = max(target, sum(1 for lesson in lessons if lesson.is_must_keep))  # as draft.effective_target
    system = SYSTEM_PROMPT.format(
        persona=persona.name, role=persona.role or "agent", project=memory.project.name, target=limit
    )
    prompt = f"Working memory to condense ({len(lessons)} lessons, at most {limit} lines wanted):\n\n" + "\n".join(
        _input_line(lesson) for lesson in lessons
    )
    return system, prompt


def compact_with_model(engine, memory, lessons, target):
    """Ask the engine for a compaction and parse its answer. Engine errors propagate to the caller."""
    system, prompt = build_prompts(memory, lessons, target)
    completion = engine.complete(system=system, prompt=prompt, purpose="compaction", max_tokens=COMPACTION_MAX_TOKENS)
    draft = parse_output(completion.text)
    return draft, completion
