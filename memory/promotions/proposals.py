"""With a model engine, the model proposes groups of working lessons that state the same lesson.

Agents restate a lesson in other words, or another language, on other days; the word rule
(detection.py) cannot join lessons that share no significant word. So with an `anthropic` or
`openai` engine, detection also shows the model the memory's working lessons and asks, through one
tool, `propose_groups`, which of them state one and the same lesson.

Batches. Lessons are sent in batches of about PROMOTION_PROPOSAL_BATCH_TOKENS input tokens
(estimated as UTF-8 bytes / 4, which overcounts English a little and counts accented text more, as
tokenizers do), in date order: a lesson is mostly restated within weeks, so restatements tend to
share a batch, and what came just before a batch is in its context.

Joining across batches and runs. Every batch also carries, as context, one line per group found
so far (its key, size and one-line summary, most recently changed first) and the newest earlier
lessons that are in no group yet, in at most half of the batch (next_batch). The
model may put new lessons into one of those groups by its key, or open a group with earlier lone
lessons, so a restatement meets an earlier lesson sent in another batch or another run. What the
model placed is stored (services.py: ModelGroup, ModelPlacement), so a later run sends as lessons
to place only those not placed yet (new or edited ones): its cost follows what was added plus a
bounded context, not the memory's size. An earlier lesson older than the lone-lesson window is met
only by the word rule.

Strict answers. An answer that names a lesson not in the batch, puts a lesson in two groups, names
a group that was not offered, leaves a new group without a summary, or is not one readable call of
the tool raises ProposalError; nothing of that batch is kept and no candidate changes.

Merging. The model's groups and the word rule's are merged so that a lesson is in at most one
group (merge()); the result then goes through the same member cap, the same verification and the
same distinct-dates rule as the word rule's groups alone.
"""

import json
import math
from collections import Counter, deque
from dataclasses import dataclass, field
from datetime import date

from memory.engines.base import Tool, single_tool_answer
from memory.promotions import detection, verification

PURPOSE = "promotion grouping"
# Engines that can be asked; the offline engine has no model, and scripted engines play other scripts.
MODEL_PROVIDERS = ("anthropic", "openai")
# The context (group summaries and earlier lone lessons) takes at most this share of a batch; the
# rest is for the lessons to place.
CONTEXT_SHARE = 1 / 2
MAX_SUMMARY_CHARS = 200
MAX_REASON_CHARS = 300
# Budget estimate of an answer: ids and a short line per group.
OUTPUT_TOKENS_PER_LESSON = 12
OUTPUT_TOKENS_PER_BATCH = 100

SYSTEM_PROMPT = (
    "You organise the working memory of an AI agent that works on a software project. The agent "
    "writes short lessons on different days and often restates an earlier lesson in other words, "
    "from another angle (a symptom, a cause, a fix) or in another language. Group lessons by what "
    "they mean, not by the words they share."
)

PROMPT_TEMPLATE = """Groups found so far (key | lessons in it | the lesson they state):
{groups}

Earlier lessons in no group yet (id | date | lesson):
{earlier}

New lessons (id | date | lesson):
{lessons}

Call propose_groups exactly once, listing every group of lessons that state one and the same
lesson (the same fact, rule or decision, whatever the wording or language):
- To add lessons to a group found so far, give its key as "existing" and the lessons' ids.
- For a new group, leave "existing" out, give the ids of at least two lessons and a "summary":
  the shared lesson in one line of English.
- A group may hold new lessons and earlier lessons in no group yet.
- "reason": one short sentence a reviewer can read, saying why these lessons belong together.
- Put a lesson in at most one group and use only the ids listed above. Leave out a lesson that
  restates nothing else; lessons that only share a topic or a file are not a group.
- If no lessons belong together, call propose_groups with an empty list.
"""

PROPOSE_TOOL = Tool(
    name="propose_groups",
    description="Report the groups of lessons that state the same lesson.",
    input_schema={
        "type": "object",
        "properties": {
            "groups": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "existing": {
                            "type": "string",
                            "description": "key of a group found so far (G1, G2, ...) the lessons join",
                        },
                        "ids": {
                            "type": "array",
                            "items": {"type": "integer"},
                            "description": "ids of lessons (new, or earlier in no group) that state this lesson",
                        },
                        "summary": {"type": "string", "description": "a new group's lesson, in one line"},
                        "reason": {"type": "string", "description": "one sentence for the reviewer"},
                    },
                    "required": ["ids", "reason"],
                    "additionalProperties": False,
                },
            },
        },
        "required": ["groups"],
        "additionalProperties": False,
    },
)

_FIXED_TEXT = SYSTEM_PROMPT + PROMPT_TEMPLATE + json.dumps(PROPOSE_TOOL.input_schema) + PROPOSE_TOOL.description


class ProposalError(Exception):
    """The model's grouping could not be used or could not be asked for; nothing of the batch was kept."""


class OverBudget(ProposalError):
    """The run would use more tokens than the persona allows."""


def estimate_tokens(text):
    return math.ceil(len(text.encode("utf-8")) / 4)


FIXED_TOKENS = estimate_tokens(_FIXED_TEXT)


@dataclass
class Item:
    """A lesson to place."""

    id: int
    day: date | None
    text: str

    @property
    def line(self):
        return f"- {self.id} | {self.day.isoformat() if self.day else 'undated'} | {' '.join(self.text.split())}"


@dataclass(eq=False)
class ModelGroupState:
    """One of the model's groups: the lessons in it and its summary (pk once stored)."""

    ids: set
    summary: str
    reason: str = ""
    pk: int | None = None
    touched: int = 0  # higher: changed more recently (offered first)


@dataclass
class Placements:
    """What the model has placed in one memory: its groups, every lesson it has been shown, and the
    lessons it left alone that may still be offered as context ({id: Item}, the recent ones)."""

    groups: list = field(default_factory=list)
    placed: set = field(default_factory=set)
    lone: dict = field(default_factory=dict)

    def next_touch(self):
        return max((g.touched for g in self.groups), default=0) + 1


@dataclass
class Batch:
    items: list
    offered: list  # ModelGroupState, in the order of their keys G1, G2, ...
    earlier: list  # Items placed alone before, shown as context
    input_tokens: int

    @property
    def estimate(self):
        return self.input_tokens + OUTPUT_TOKENS_PER_BATCH + OUTPUT_TOKENS_PER_LESSON * len(self.items)


class Budget:
    """Tokens one detection run may use, counted from the engine's call log since the run began."""

    def __init__(self, limit, recorder, *, since=None):
        self.limit = limit
        self.recorder = recorder
        self.since = len(recorder.calls) if since is None and recorder is not None else (since or 0)

    @property
    def spent(self):
        if self.recorder is None:
            return 0
        _, tokens_in, tokens_out = self.recorder.totals(self.since)
        return tokens_in + tokens_out

    def check(self, estimate, what):
        if self.limit is None:
            return
        spent = self.spent
        if spent + estimate > self.limit:
            used = f" on top of the {spent:,} this run has used" if spent else ""
            raise OverBudget(
                f"Detection stopped before {what}: it would take about {estimate:,} tokens{used}, over the "
                f"persona's detection budget of {self.limit:,} tokens per run (raise it in the persona's "
                "Model settings)"
            )


# -- batching ---------------------------------------------------------------------------------------


def order_for_batches(items):
    """Lessons by date (undated first), then id: a lesson is restated mostly within weeks, so
    neighbours in time share a batch, and an earlier lesson is in the context of a later one."""
    return sorted(items, key=lambda item: (item.day or date.min, item.id))


def _summary_line(key, group):
    return f"{key} | {len(group.ids)} | {group.summary}"


def _newest_lone(lone):
    return sorted(lone.values(), key=lambda item: (item.day or date.min, item.id), reverse=True)


def _fit(costs, room):
    """How many of these (in order) fit in `room` tokens, and their tokens."""
    taken = used = 0
    for cost in costs:
        if used + cost > room:
            break
        taken += 1
        used += cost
    return taken, used


def next_batch(queue, placements, batch_tokens):
    """Take the next batch off `queue` (a deque of Items).

    The lessons to place take at least half of the batch (always at least one lesson); the context
    fills the rest: the most recently changed groups' summaries and the newest earlier lone lessons,
    half each when both need more, so a small batch (a run after a few appends) shows the model
    further back.
    """
    free = batch_tokens - FIXED_TOKENS
    groups = sorted(placements.groups, key=lambda g: -g.touched)
    group_costs = [estimate_tokens(_summary_line(f"G{n}", g)) + 1 for n, g in enumerate(groups, 1)]
    lone = _newest_lone(placements.lone)
    lone_costs = [estimate_tokens(item.line) + 1 for item in lone]
    context = min(sum(group_costs) + sum(lone_costs), free * CONTEXT_SHARE)
    items, used = [], 0
    while queue:
        cost = estimate_tokens(queue[0].line) + 1
        if items and used + cost > free - context:
            break
        items.append(queue.popleft())
        used += cost
    room = free - used
    n_groups, group_tokens = _fit(group_costs, max(room - sum(lone_costs), room / 2))
    n_lone, lone_tokens = _fit(lone_costs, room - group_tokens)
    return Batch(
        items=items,
        offered=groups[:n_groups],
        earlier=lone[:n_lone][::-1],
        input_tokens=FIXED_TOKENS + used + group_tokens + lone_tokens,
    )


def plan(items, placements, batch_tokens):
    """The batches these items would take with the context as it is now (the estimate before a run)."""
    queue, batches = deque(items), []
    while queue:
        batches.append(next_batch(queue, placements, batch_tokens))
    return batches


# -- asking ---------------------------------------------------------------------------------------------


@dataclass
class Assignment:
    ids: list
    existing: ModelGroupState | None
    summary: str
    reason: str


def _one_line(value, limit):
    return " ".join(value.split())[:limit]


def parse_answer(arguments, batch_ids, offered, earlier_ids=()):
    """The tool arguments as [Assignment], or ProposalError saying what is wrong with them.

    batch_ids: the lessons to place; earlier_ids: the earlier lone lessons shown with them;
    offered: {key: ModelGroupState} of the groups shown.
    """
    if not isinstance(arguments, dict):
        raise ProposalError("the answer is not a JSON object")
    groups = arguments.get("groups")
    if not isinstance(groups, list):
        raise ProposalError("the answer lacks a list of groups")
    batch_ids = set(batch_ids) | set(earlier_ids)
    seen, result = set(), []
    for n, entry in enumerate(groups, 1):
        if not isinstance(entry, dict):
            raise ProposalError(f"group {n} is not a JSON object")
        ids = entry.get("ids")
        if not isinstance(ids, list) or not ids or not all(isinstance(i, int) and not isinstance(i, bool) for i in ids):
            raise ProposalError(f"group {n} must list lesson ids (whole numbers)")
        unknown = sorted(set(ids) - batch_ids)
        if unknown:
            raise ProposalError(f"group {n} names lessons that were not sent in this batch: {unknown}")
        twice = sorted(set(ids) & seen)
        if twice:
            raise ProposalError(
                f"lesson{'s' if len(twice) > 1 else ''} {twice} {'are' if len(twice) > 1 else 'is'} "
                "in more than one group"
            )
        seen |= set(ids)
        reason = entry.get("reason", "")
        if not isinstance(reason, str):
            raise ProposalError(f"group {n}'s reason must be text")
        key = entry.get("existing") or None
        if key is not None and (not isinstance(key, str) or key.strip() not in offered):
            keys = ", ".join(offered) or "none"
            raise ProposalError(f"group {n} joins a group {key!r} that was not offered (offered: {keys})")
        summary = entry.get("summary", "")
        if not isinstance(summary, str):
            raise ProposalError(f"group {n}'s summary must be text")
        if key is None and len(set(ids)) < 2:
            continue  # a new group of one lesson: it stands alone
        if key is None and not summary.strip():
            raise ProposalError(f"group {n} is new but has no summary")
        result.append(
            Assignment(
                ids=sorted(set(ids)),
                existing=offered[key.strip()] if key else None,
                summary=_one_line(summary, MAX_SUMMARY_CHARS),
                reason=_one_line(reason, MAX_REASON_CHARS),
            )
        )
    return result


def _prompt(batch):
    groups = "\n".join(_summary_line(f"G{n}", g) for n, g in enumerate(batch.offered, 1)) or "(none yet)"
    earlier = "\n".join(item.line for item in batch.earlier) or "(none)"
    return PROMPT_TEMPLATE.format(groups=groups, earlier=earlier, lessons="\n".join(item.line for item in batch.items))


def ask(engine, batch, *, max_tokens):
    """One model call for one batch: its [Assignment], or ProposalError."""
    answer = single_tool_answer(
        engine,
        system=SYSTEM_PROMPT,
        prompt=_prompt(batch),
        tool=PROPOSE_TOOL,
        purpose=PURPOSE,
        error=ProposalError,
        max_tokens=max_tokens,
    )
    offered = {f"G{n}": g for n, g in enumerate(batch.offered, 1)}
    return parse_answer(answer, [item.id for item in batch.items], offered, [item.id for item in batch.earlier])


def apply(placements, batch, assignments):
    """Record one batch's answer; returns the groups it created or changed (an earlier lone lesson
    put into a group leaves the lone lessons)."""
    changed = []
    for assignment in assignments:
        group = assignment.existing
        if group is None:
            group = ModelGroupState(ids=set(), summary=assignment.summary)
            placements.groups.append(group)
        group.ids |= set(assignment.ids)
        group.reason = assignment.reason or group.reason
        group.touched = placements.next_touch()
        changed.append(group)
        for i in assignment.ids:
            placements.lone.pop(i, None)
    grouped = {i for a in assignments for i in a.ids}
    for item in batch.items:
        placements.placed.add(item.id)
        if item.id not in grouped:
            placements.lone[item.id] = item
    return changed


def place(engine, items, placements, *, batch_tokens, max_output_tokens, budget, on_batch=None):
    """Show the model `items` (lessons it has not placed) batch by batch, updating `placements`.

    on_batch(batch, changed_groups) runs after each answer is accepted (the service stores it
    there, so a run stopped later keeps what it paid for). Returns the number of batches sent.
    Raises ProposalError (OverBudget before a call that would exceed the budget).
    """
    items = [item for item in items if item.id not in placements.placed]
    if not items:
        return 0
    ordered = order_for_batches(items)
    batches = plan(ordered, placements, batch_tokens)
    budget.check(
        sum(b.estimate for b in batches),
        f"grouping {len(items)} lesson{'s' if len(items) != 1 else ''} in {len(batches)} "
        f"batch{'es' if len(batches) != 1 else ''}",
    )
    queue, sent = deque(ordered), 0
    while queue:
        batch = next_batch(queue, placements, batch_tokens)
        sent += 1
        budget.check(batch.estimate, f"grouping batch {sent} ({len(batch.items)} lessons)")
        try:
            assignments = ask(engine, batch, max_tokens=max_output_tokens)
        except ProposalError as exc:
            raise ProposalError(
                f"Grouping batch {sent} (lessons {batch.items[0].id} to {batch.items[-1].id}) failed: {exc}"
            ) from None
        changed = apply(placements, batch, assignments)
        if on_batch is not None:
            on_batch(batch, changed)
    return sent


# -- merging with the word rule ----------------------------------------------------------------------


@dataclass
class Proposed:
    """A group on its way to the inbox, with how it was found and the model's reason."""

    group: detection.Group
    found_by: str  # "words", "model" or "both" (PromotionCandidate.FoundBy)
    reason: str = ""


def _capped(ids, model_ids, word_ids, facts_by_id, max_members):
    """At most max_members of `ids`: lessons both found first, then the model's, then the word
    rule's; within that, lessons adding a date before lessons repeating one."""
    if len(ids) <= max_members:
        return sorted(ids)

    def rank(i):
        return (
            0 if i in model_ids and i in word_ids else 1 if i in model_ids else 2,
            min(facts_by_id[i].dates, default=date.min),
            i,
        )

    chosen, dates = [], set()
    ordered = sorted(ids, key=rank)
    for i in ordered:
        if len(chosen) < max_members and not facts_by_id[i].dates <= dates:
            chosen.append(i)
            dates |= facts_by_id[i].dates
    for i in ordered:
        if len(chosen) < max_members and i not in chosen:
            chosen.append(i)
    return sorted(chosen)


def merge(word_groups, model_groups, facts_by_id, *, min_dates, max_members=detection.MAX_MEMBERS):
    """The model's groups and the word rule's, merged so that a lesson is in at most one group.

    A word group that overlaps no model group stays as it is. One that overlaps model groups joins
    them: each of its lessons the model placed stays where the model put it, the others join the
    model group it shares most lessons with. Then the member cap and the distinct-dates rule apply
    (a single lesson stays only when confirmed on enough dates by itself). Returns [Proposed].
    """
    merged = []
    owner = {}
    for group in model_groups:
        ids = {i for i in group.ids if i in facts_by_id}
        if not ids:
            continue
        entry = {"ids": set(ids), "model": set(ids), "words": set(), "reason": group.reason, "cohesion": 1.0}
        for i in ids:
            owner[i] = len(merged)
        merged.append(entry)
    for word in word_groups:
        ids = [i for i in word.lesson_ids if i in facts_by_id]
        overlap = Counter(owner[i] for i in ids if i in owner)
        if not overlap:
            merged.append({"ids": set(ids), "model": set(), "words": set(ids), "reason": "", "cohesion": word.cohesion})
            continue
        target = max(sorted(overlap), key=lambda k: overlap[k])
        for k in overlap:
            merged[k]["words"] |= {i for i in ids if owner.get(i) == k}
        for i in ids:
            if i not in owner:
                owner[i] = target
                merged[target]["ids"].add(i)
                merged[target]["words"].add(i)
    result = []
    for entry in merged:
        ids = _capped(entry["ids"], entry["model"], entry["words"], facts_by_id, max_members)
        group = detection.group_of([facts_by_id[i] for i in ids], entry["cohesion"])
        if group.distinct_dates < min_dates:
            continue
        found_by = "both" if entry["model"] and entry["words"] else "model" if entry["model"] else "words"
        result.append(Proposed(group=group, found_by=found_by, reason=entry["reason"] if entry["model"] else ""))
    result.sort(key=lambda p: p.group.lesson_ids[0])
    return result


def verify(proposed, *, engine, lessons, facts_by_id, min_dates):
    """Each proposed group through the model's check (verification.py), one group at a time so it
    keeps how it was found: [(Proposed, note)]. Raises verification.VerificationError."""
    kept = []
    for item in proposed:
        for checked in verification.verify(
            [item.group], engine=engine, lessons=lessons, facts=facts_by_id, min_dates=min_dates
        ):
            kept.append((Proposed(group=checked.group, found_by=item.found_by, reason=item.reason), checked.note))
    return kept


def estimate_checks(proposed, texts):
    """Tokens the model's check and wording of these groups take, about (two calls per group)."""
    per_group = estimate_tokens(verification.SYSTEM_PROMPT + verification.PROMPT_TEMPLATE) + 400
    return sum(
        2 * (per_group + sum(estimate_tokens(texts.get(i, "")) + 8 for i in p.group.lesson_ids)) for p in proposed
    )
