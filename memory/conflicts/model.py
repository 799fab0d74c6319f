"""The model engine for conflicts: lessons that cannot both hold although they share no words.

“Deploys go out through Jenkins” and “we ship with GitHub Actions now” disagree without a word in
common, so the offline detector (detection.py) cannot see them. With CONFLICTS_ENGINE set to
`anthropic` or `openai`, the lessons to check (a new batch, or every lesson the model has not
compared yet) are shown to the model next to the memory's other active lessons, and the model
answers through one tool, `report_conflicts`, with pairs (older id, newer id, relation, reason).

Budget. One call carries at most CONFLICTS_MODEL_LESSONS_PER_CALL lessons and
CONFLICTS_MODEL_CHARS_PER_CALL characters of lesson lines; one run at most
CONFLICTS_MODEL_CHARS_PER_RUN characters. When everything fits, one call holds the lessons to check
and every other lesson. Otherwise the lessons to check, ordered by category and cited file so that
related ones travel together, take at most half of each call, and the other half is filled with
the other lessons most likely to be about the same thing: citing the same file (or folder), of the
same category, sharing words, core lessons, then the most recent. The prompt says how many were
left out. Lessons to check that do not fit in the run's budget wait for the next run.

Trust nothing. Every pair is checked: ids that were not sent, a lesson paired with itself, a pair
that involves no lesson to check, an unknown relation and repeats are dropped; the direction is
decided from dates and tiers as the offline detector decides it (detection.direction), and only
where that rule cannot tell (the same day and no change word, a core lesson dated by its
promotion) does the model's order stand. An answer that cannot be read at all (no tool call,
broken arguments, no list) is an error of that call: the call is marked as failed in the LLM call
log, its lessons stay unchecked, and the other calls and the offline findings are kept.

Pure over light lessons (id, text, lesson_date, tier, and optionally category and paths), so the
product (model_runs.py) and the evaluation run the same code.
"""

import heapq
import posixpath
from collections.abc import Iterable
from dataclasses import dataclass, field

from django.conf import settings

from memory.conflicts import detection
from memory.conflicts.lexicon import STOPWORDS
from memory.engines.base import EngineError, Tool
from memory.engines.recorder import ERROR
from memory.jobs import enqueue_on_commit

PURPOSE = "conflict detection"
MODEL_PROVIDERS = ("anthropic", "openai")
RELATIONS = ("supersedes", "contradicts")
MAX_REASON_CHARS = 300
# The lessons to check take at most this share of a call when the memory does not fit in one.
CHECK_SHARE = 1 / 2
PUNCTUATION = ".,;:!?()[]'\"`"

SYSTEM_PROMPT = (
    "You review the shared memory of a team of AI agents working on a software project. The memory "
    "holds short dated lessons. Over time a lesson can stop being true: a newer lesson replaces it "
    "(another tool, version, limit, path, process or decision), or two lessons cannot both hold. "
    "Judge by meaning, not by shared words: two lessons may disagree without a word in common, or "
    "in different languages."
)

HEADER = "(id | date | tier | category | refs | lesson):"

PROMPT_TEMPLATE = """Lessons to check {header}
{check}

Other lessons of the memory {header}
{context}
{selection}
Call report_conflicts exactly once, listing every pair of a lesson to check and another lesson
listed above (to check or other) that cannot both hold:
- "older" and "newer": the two ids, the older one first by date (on the same date, the one that
  was true first).
- "relation": "supersedes" when the newer lesson replaces the older one (something changed),
  "contradicts" when they disagree and neither is clearly the newer knowledge.
- "reason": one short sentence for a reviewer saying what the two lessons disagree on.
Lessons about different things (another service, environment, file or case) both hold, and so do
lessons that add detail to each other: leave them out. If no pair disagrees, call
report_conflicts with an empty list.
"""

REPORT_TOOL = Tool(
    name="report_conflicts",
    description="Report the pairs of lessons that cannot both hold.",
    input_schema={
        "type": "object",
        "properties": {
            "conflicts": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "older": {"type": "integer", "description": "id of the older lesson"},
                        "newer": {"type": "integer", "description": "id of the newer lesson"},
                        "relation": {"type": "string", "enum": list(RELATIONS)},
                        "reason": {"type": "string", "description": "one sentence for the reviewer"},
                    },
                    "required": ["older", "newer", "relation", "reason"],
                    "additionalProperties": False,
                },
            },
        },
        "required": ["conflicts"],
        "additionalProperties": False,
    },
)


class AnswerError(Exception):
    """The model's answer to one call cannot be read; nothing of that call is kept."""


@dataclass(frozen=True)
class Budget:
    lessons_per_call: int
    chars_per_call: int
    chars_per_run: int
    max_output_tokens: int

    @classmethod
    def from_settings(cls):
        return cls(
            lessons_per_call=settings.CONFLICTS_MODEL_LESSONS_PER_CALL,
            chars_per_call=settings.CONFLICTS_MODEL_CHARS_PER_CALL,
            chars_per_run=settings.CONFLICTS_MODEL_CHARS_PER_RUN,
            max_output_tokens=settings.CONFLICTS_MODEL_MAX_OUTPUT_TOKENS,
        )


@dataclass(frozen=True)
class ModelFinding:
    older_id: int
    newer_id: int
    relation: str
    evidence: str  # the model's reason


def line(lesson) -> str:
    paths = ", ".join(getattr(lesson, "paths", ()) or ()) or "-"
    day = lesson.lesson_date.isoformat() if lesson.lesson_date else "undated"
    text = " ".join(lesson.text.split())
    return f"- {lesson.id} | {day} | {lesson.tier} | {getattr(lesson, 'category', '') or '-'} | {paths} | {text}"


def _cost(lesson) -> int:
    return len(line(lesson)) + 1


@dataclass
class Call:
    """One request: the lessons to check and the other lessons shown with them."""

    check: list
    context: list
    others: int  # the other lessons of the memory, shown or not

    @property
    def chars(self):
        return sum(_cost(lesson) for lesson in self.check + self.context)

    @property
    def left_out(self):
        return self.others - len(self.context)


@dataclass
class Plan:
    calls: list = field(default_factory=list)
    postponed: list = field(default_factory=list)  # lessons to check left for a later run


def _topic(lesson):
    paths = getattr(lesson, "paths", ()) or ()
    return (getattr(lesson, "category", "") or "", paths[0] if paths else "~", lesson.lesson_date, lesson.id)


def _chunks(check, budget):
    """The lessons to check in groups of at most half a call each (at least one lesson)."""
    most_lessons = max(1, int(budget.lessons_per_call * CHECK_SHARE))
    most_chars = budget.chars_per_call * CHECK_SHARE
    chunk, used = [], 0
    for lesson in sorted(check, key=_topic):
        cost = _cost(lesson)
        if chunk and (len(chunk) >= most_lessons or used + cost > most_chars):
            yield chunk
            chunk, used = [], 0
        chunk.append(lesson)
        used += cost
    if chunk:
        yield chunk


def _plain_words(text):
    return {w for w in (w.strip(PUNCTUATION) for w in text.lower().split()) if len(w) > 3} - STOPWORDS


class _Affinity:
    """Ranks the other lessons of a memory by how likely they speak of what a chunk speaks of."""

    def __init__(self, lessons):
        # Plain lower-case words, not the offline detector's stems: this runs over every lesson of a
        # memory that does not fit in a call.
        self.facts = {}
        for lesson in lessons:
            paths = frozenset(getattr(lesson, "paths", ()) or ())
            folders = frozenset(posixpath.dirname(p) for p in paths) - {""}
            category = getattr(lesson, "category", "") or ""
            self.facts[lesson.id] = (_plain_words(lesson.text), paths, folders, category, lesson.tier == "core")

    def ranked(self, chunk, pool, limit):
        """The `limit` likeliest lessons of `pool`, likeliest first."""
        mine = [self.facts[lesson.id] for lesson in chunk]
        words = frozenset().union(*(f[0] for f in mine))
        paths = frozenset().union(*(f[1] for f in mine))
        folders = frozenset().union(*(f[2] for f in mine))
        categories = {f[3] for f in mine} - {""}
        facts = self.facts

        def score(other):
            other_words, other_paths, other_folders, category, core = facts[other.id]
            points = 4 if not paths.isdisjoint(other_paths) else 2 if not folders.isdisjoint(other_folders) else 0
            points += 2 if category in categories else 0
            points += min(3, len(words & other_words)) + core
            return (points, other.lesson_date, other.id)

        return heapq.nlargest(limit, pool, key=score)


def plan(lessons: list, check_ids: Iterable[int], budget: Budget) -> Plan:
    """The calls that compare the lessons `check_ids` with the rest of `lessons`, within the budget."""
    wanted = set(check_ids)
    check = [lesson for lesson in lessons if lesson.id in wanted]
    if not check:
        return Plan()
    result = Plan()
    total = sum(_cost(lesson) for lesson in lessons)
    if len(lessons) <= budget.lessons_per_call and total <= budget.chars_per_call:
        others = [lesson for lesson in lessons if lesson.id not in wanted]
        calls = [Call(check=sorted(check, key=_topic), context=others, others=len(others))]
    else:
        affinity = _Affinity(lessons)
        calls = []
        for chunk in _chunks(check, budget):
            inside = {lesson.id for lesson in chunk}
            pool = [lesson for lesson in lessons if lesson.id not in inside]
            context, count = [], len(chunk)
            used = sum(_cost(lesson) for lesson in chunk)
            for other in affinity.ranked(chunk, pool, 2 * budget.lessons_per_call):
                if count >= budget.lessons_per_call:
                    break
                cost = _cost(other)
                if used + cost > budget.chars_per_call:
                    continue  # a long lesson does not fit; a shorter one may
                context.append(other)
                used += cost
                count += 1
            calls.append(Call(check=chunk, context=context, others=len(pool)))
    spent = 0
    for call in calls:
        if result.postponed or (result.calls and spent + call.chars > budget.chars_per_run):
            result.postponed.extend(call.check)
            continue
        result.calls.append(call)
        spent += call.chars
    return result


def prompt(call: Call) -> str:
    selection = ""
    if call.left_out:
        selection = (
            f"\n(The memory has {call.others} other lessons; the {len(call.context)} listed are those citing "
            "the same files or folders, of the same category, sharing words, core lessons, then the most "
            "recent. The rest were left out to keep this request small.)\n"
        )
    return PROMPT_TEMPLATE.format(
        header=HEADER,
        check="\n".join(line(lesson) for lesson in call.check),
        context="\n".join(line(lesson) for lesson in call.context) or "(none)",
        selection=selection,
    )


# -- reading the answer -------------------------------------------------------------------------------


def _as_id(value):
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


def _as_relation(value):
    if not isinstance(value, str):
        return None
    word = value.strip().lower()
    if word.startswith("supersed"):
        return "supersedes"
    if word.startswith("contradict"):
        return "contradicts"
    return None


def settle(older, newer, relation):
    """(older, newer, relation) as stored: the offline detector's direction wherever its dates and
    tiers tell; the model's order only where they cannot."""
    first, second, by_dates = detection.direction(older, newer)
    if relation == "contradicts":
        return first, second, "contradicts"
    if by_dates == "supersedes":
        return first, second, "supersedes"
    return older, newer, "supersedes"


@dataclass
class Reading:
    findings: list = field(default_factory=list)
    dropped: list = field(default_factory=list)  # why each dropped pair was dropped
    turned: int = 0  # pairs whose direction the dates corrected


def read_answer(arguments_list, call: Call) -> Reading:
    """The pairs of one call's answer(s), validated; AnswerError when nothing can be read."""
    shown = {lesson.id: lesson for lesson in call.check + call.context}
    checked = {lesson.id for lesson in call.check}
    reading, seen = Reading(), set()
    for arguments in arguments_list:
        entries = arguments.get("conflicts") if isinstance(arguments, dict) else None
        if not isinstance(entries, list):
            raise AnswerError("the answer lacks a list of conflicts")
        for n, entry in enumerate(entries, 1):
            if not isinstance(entry, dict):
                reading.dropped.append(f"pair {n} is not an object")
                continue
            a, b = _as_id(entry.get("older")), _as_id(entry.get("newer"))
            relation = _as_relation(entry.get("relation"))
            if a is None or b is None or a not in shown or b not in shown:
                reading.dropped.append(
                    f"pair {n} names a lesson that was not sent ({entry.get('older')!r}, {entry.get('newer')!r})"
                )
                continue
            if a == b:
                reading.dropped.append(f"pair {n} pairs lesson {a} with itself")
                continue
            if a not in checked and b not in checked:
                reading.dropped.append(f"pair {n} ({a}, {b}) holds no lesson to check")
                continue
            if relation is None:
                reading.dropped.append(f"pair {n} has an unknown relation {entry.get('relation')!r}")
                continue
            if frozenset((a, b)) in seen:
                reading.dropped.append(f"pair {n} ({a}, {b}) repeats an earlier pair")
                continue
            seen.add(frozenset((a, b)))
            older, newer, relation = settle(shown[a], shown[b], relation)
            reading.turned += older.id != a
            reason = entry.get("reason")
            reason = " ".join(reason.split())[:MAX_REASON_CHARS] if isinstance(reason, str) else ""
            reading.findings.append(
                ModelFinding(older.id, newer.id, relation, reason or f"{relation} (no reason given)")
            )
    return reading


def ask(engine, call: Call, *, max_tokens: int) -> Reading:
    """One model call. EngineError when the call itself failed (the run stops); AnswerError when its
    answer cannot be read (the call is marked failed in the log, the run goes on)."""
    answers = []

    def handler(tool_call):
        answers.append(tool_call.arguments)
        return "Recorded."

    recorder = getattr(engine, "recorder", None)
    since = len(recorder.calls) if recorder is not None else 0
    session = engine.run_tools(
        system=SYSTEM_PROMPT,
        prompt=prompt(call),
        tools=[REPORT_TOOL],
        handler=handler,
        purpose=PURPOSE,
        max_turns=1,
        max_tokens=max_tokens,
    )
    try:
        refused = [result.content for _call, result in session.calls if result.is_error]
        if refused:
            raise AnswerError(f"the answer was not usable ({refused[0]})")
        if not answers:
            raise AnswerError(f"the answer did not call {REPORT_TOOL.name}")
        return read_answer(answers, call)
    except AnswerError as exc:
        _mark_failed(recorder, since, f"{engine.provider} answer not used: {exc}")
        raise


def _mark_failed(recorder, since, message):
    """The call went through but its answer was unusable: the log says so on that call."""
    if recorder is None:
        return
    for row in recorder.calls[since:]:
        if row.outcome == ERROR:
            continue
        row.outcome, row.error = ERROR, message[:2000]
        if row.pk is not None:
            row.save(update_fields=["outcome", "error"])


@dataclass
class Outcome:
    findings: list = field(default_factory=list)
    calls: int = 0
    checked: list = field(default_factory=list)  # lessons compared in calls whose answer was read
    postponed: list = field(default_factory=list)
    errors: list = field(default_factory=list)
    notes: list = field(default_factory=list)

    @property
    def failed(self):
        return bool(self.errors)


def find(engine, lessons: list, check_ids: Iterable[int], budget: Budget) -> Outcome:
    """Compare the lessons `check_ids` with the rest of `lessons` through the model, within `budget`.

    Never raises for what the model or the provider did: a failed call stops the run (its lessons and
    the rest stay unchecked), an unreadable answer loses only its own call."""
    work = plan(lessons, check_ids, budget)
    outcome, seen = Outcome(postponed=list(work.postponed)), set()
    for n, call in enumerate(work.calls, 1):
        try:
            reading = ask(engine, call, max_tokens=budget.max_output_tokens)
        except EngineError as exc:
            outcome.errors.append(f"call {n}: {exc}")
            outcome.postponed.extend(lesson for later in work.calls[n - 1 :] for lesson in later.check)
            break
        except AnswerError as exc:
            outcome.errors.append(f"call {n}: {exc}")
            outcome.calls += 1
            continue
        outcome.calls += 1
        outcome.checked.extend(call.check)
        for finding in reading.findings:
            pair = frozenset((finding.older_id, finding.newer_id))
            if pair not in seen:
                seen.add(pair)
                outcome.findings.append(finding)
        if reading.dropped:
            outcome.notes.append(f"call {n}: dropped {len(reading.dropped)} pair(s): {'; '.join(reading.dropped[:5])}")
        if reading.turned:
            outcome.notes.append(f"call {n}: {reading.turned} pair(s) turned round to follow the dates")
        if call.left_out:
            outcome.notes.append(
                f"call {n}: {len(call.check)} lesson(s) checked against {len(call.context)} of {call.others} others "
                "(same files, category, words, core, most recent first)"
            )
    if outcome.postponed and not outcome.errors:
        outcome.notes.append(f"{len(outcome.postponed)} lesson(s) left for the next run: the run's budget is spent")
    return outcome


# -- the hook of conflicts_detect ----------------------------------------------------------------------


def model_engine_configured() -> bool:
    return settings.CONFLICTS_ENGINE in MODEL_PROVIDERS


def conflicts_model_request(*, memory, lesson_ids=None) -> None:
    """With a model engine configured, queue its pass over these lessons (None: every lesson it has
    not compared yet) once the offline pass has committed: model calls never hold a transaction."""
    if model_engine_configured():
        enqueue_on_commit(
            "memory.conflicts.detect_with_model", memory.pk, None if lesson_ids is None else list(lesson_ids)
        )
