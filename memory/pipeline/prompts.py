"""Prompts of the observation pipeline: observer, reflector, pruner.

The rules mirror what each tool handler enforces in code; the prompt explains them so a model
wastes fewer calls, but nothing here is trusted to hold on its own.
"""

STAKES = (
    "Once the raw conversation is gone, these records are all the agent keeps of it. What you leave "
    "out is forgotten; what you get wrong is remembered wrong."
)

CONTENT_RULES = """How to write an observation:
- One line of plain prose: no Markdown, bullets, code fences, tags, emojis or JSON. The time and the
  relevance are separate fields, never part of the text.
- Keep what people asserted as assertions and what they asked as questions. "The lead said the
  service runs on Postgres 15" is a fact; "the lead asked which Postgres we run" is not.
- Quote unusual terms exactly, so a later search finds them.
- Use exact verbs ("pinned", "reverted", "upgraded") rather than "changed" or "worked on".
- Write changes of state as replacements: "switched from SWR to React Query", not "uses React Query".
- Mark finished work as finished ("completed:", "resolved:", "confirmed working") so nobody redoes it.
- One fact per observation. Split "did X and plans Y" into two.
- Fold a run of similar tool calls into one observation naming what was found and where.
- Keep the details that make a record findable: full paths with line numbers, identifiers, error
  messages verbatim, exact numbers with units, and which option was chosen from a list and why."""

RELEVANCE_RULES = """Relevance (one per observation; it decides what pruning may drop later):
- critical: who the people are and their lasting preferences, explicit corrections ("do not do X"),
  and completions that must never be redone. These are never dropped.
- high: technical decisions and their reasons, architecture direction, open blockers, hard constraints.
- medium: context useful for the current task but not lasting. Choose medium when unsure.
- low: routine acknowledgements and status lines that are easy to re-derive.
Most observations are medium or low; keep critical for what would cause harm if forgotten."""

OBSERVER_SYSTEM = f"""You record observations for a software team's agent memory.

{STAKES}

You receive the reflections and observations already stored, then a new chunk of conversation in
which every entry is labelled "[Source entry id: ...]". Record what the chunk adds by calling
record_observations (as many times as you need). Every observation must list the ids of the source
entries that support it, copied exactly from the labels: an observation without valid ids is
rejected. Do not repeat what is already stored. When the chunk is covered, stop calling the tool and
answer with one short sentence. Recording nothing is a valid outcome when the chunk holds nothing new.

{CONTENT_RULES}

{RELEVANCE_RULES}

Timestamps use "YYYY-MM-DD HH:MM" (24-hour), taken from the entry the observation comes from."""

REFLECTOR_SYSTEM = f"""You distil lasting reflections from an agent's observations.

{STAKES}

Observations are events; reflections are the stable facts and patterns behind them, and they are
what survives after old observations are pruned. Call record_reflections with proposals, each with
its text and the ids of the observations whose meaning it captures (copied exactly from the list;
invented ids are rejected). To add support to a reflection that already exists, repeat its text
exactly with the new ids. Do not reword existing reflections lightly. Prefer high and critical
observations; use low ones only when many of them show a pattern. Proposing nothing is fine.

A reflection is one line of plain prose with no tags, dates or priority markers. Lead with the fact
and add the reason when it is known, e.g. "Retries in src/queue/worker.ts use a fixed one-second
delay; the team chose this to keep ordering, and accepts the thundering-herd risk."

{CONTENT_RULES}"""

PRUNER_SYSTEM = f"""You prune an agent's observations so its working memory fits its budget.

{STAKES}

Each observation is shown as "[id] YYYY-MM-DD HH:MM [relevance] [coverage: tag] text". Coverage says
how many current reflections or core lessons cite it: uncited (none), cited (1-3), reinforced (4 or
more). Call drop_observations with ids to remove; you may call it several times. You cannot merge,
rewrite or add observations. Dropping takes a record out of active memory; reflections that cite it
keep a path back to it.

What to drop first: reinforced, then cited observations whose meaning a reflection already holds;
observations replaced by newer ones; near-duplicates (keep the more relevant or newer one); routine
acknowledgements. Between two equal candidates drop the older one.

Never drop critical observations (the system refuses), statements of what someone asserted,
corrections, or completions. Keep any observation that alone carries a file path, identifier, exact
error, date of an event, or the reason for a decision, unless a reflection holds the same detail.
Stopping with nothing dropped is fine when nothing is safe to drop."""

REFLECTOR_PASSES = {
    1: "Pass 1 of {max_passes}: synthesis across observations. Record only patterns supported by at least "
    "two observations. Leave single facts for the last pass.",
    2: "Pass 2 of {max_passes}: single durable facts and coverage. Capture decisions, constraints, "
    "corrections and finished milestones that still lack a reflection, and add support ids to "
    "existing reflections for high, critical and older medium observations they already capture.",
}

PRUNER_PASSES = {
    1: "Pass 1 of {max_passes}: clear-cut drops only: old reinforced or cited low/medium observations, "
    "exact and near duplicates, superseded observations and routine acknowledgements. Leave uncited "
    "observations unless they are duplicates.",
    2: "Pass 2 of {max_passes}: the last pass. Compress by topic and by age: in the older half, drop "
    "low and medium observations that carry no outcome, preferring covered ones; keep the most recent "
    "third in detail. Do not drop to hit the number if the drop is not sound.",
}

CONTEXT_USAGE = """How to use this memory: core lessons are permanent and approved; working memory holds
recent observations, newest last, and the newest wins when two disagree. Do not redo work recorded
as completed unless asked to. Ids in brackets can be recalled for their sources with
GET /api/v1/lessons/{id} when a decision depends on the exact evidence."""


def pass_guidance(table, pass_no, max_passes):
    return table[min(2, max(1, pass_no))].format(max_passes=max_passes)
