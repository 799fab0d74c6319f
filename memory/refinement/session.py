"""The refinement tool session: what the model may do to core memory, enforced in code.

Which tier: refinement covers the **core** tier only. Working memory already has its own
rewriter (compaction, validated before it is applied, over a line threshold); core lessons are
the permanent ones that only grow (through promotion) and that nothing else de-duplicates. Letting
two rewriters loose on the same tier would make their guarantees impossible to reason about, so
each tier has exactly one.

How the guarantees hold whatever the model asks:
- Every tool call goes through `RefinementSession.handle`. The session works on a *staged* copy of
  the memory's active core lessons; nothing touches the lesson tables while the session runs.
- At most `REFINEMENT_OP_CAP` mutating actions (consolidate, update, delete, protect) are accepted;
  later ones are refused with an explicit message and recorded as refused.
- Protected lessons cannot be consolidated, updated or deleted.
- After every accepted mutating action the retention check runs on the staged copy:
  mass = characters / 4 of the active core lessons, retention = mass kept / mass before the session,
  where a consolidation counts as keeping the share of each merged lesson's words its text still
  holds (merging two near-identical lessons keeps them; a merge that drops details, or a delete,
  does not).
  Below the persona's threshold the whole session is discarded at once (nothing was ever written),
  the run is marked terminated, the tool answers "session rolled back, terminated" and every later
  call gets the termination error; `should_stop` ends the engine loop.
- Only when the session ends normally are the staged actions applied, through memory.services, in
  one transaction and one ChangeBatch of kind refinement (so a completed run reverts as one change),
  together with the run's final status. A worker killed mid-run therefore leaves no half-applied run:
  either the final transaction committed whole, or nothing did (the sweeper marks such runs failed).
- Progress (operations, heartbeat, retention, current action) is committed as it happens so the run
  page can show it live; it is bookkeeping about the run, never lesson data.
"""

import json
import logging
import re
from dataclasses import dataclass, field

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from memory import services
from memory.engines.base import Tool, ToolCall, ToolResult
from memory.models import (
    CORE_CATEGORIES,
    Lesson,
    LessonStatus,
    RefinementOperation,
    RefinementRun,
    Relevance,
    Tier,
)
from memory.review_queue import announce_run

log = logging.getLogger(__name__)

MUTATING = ("consolidate", "update", "delete", "protect")
TERMINATED_MESSAGE = "session rolled back, terminated"
TERMINATION_ERROR = "This refinement session was terminated; no further actions are accepted."

TOOLS = [
    Tool(
        "search",
        "Find core lessons containing all the given words.",
        {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
    ),
    Tool(
        "consolidate",
        "Replace two or more lessons that record the very same thing by one lesson.",
        {
            "type": "object",
            "properties": {
                "ids": {"type": "array", "items": {"type": "integer"}, "minItems": 2},
                "text": {"type": "string"},
            },
            "required": ["ids", "text"],
        },
    ),
    Tool(
        "update",
        "Tighten the wording of one lesson without losing meaning.",
        {
            "type": "object",
            "properties": {"id": {"type": "integer"}, "text": {"type": "string"}},
            "required": ["id", "text"],
        },
    ),
    Tool(
        "delete",
        "Remove one lesson (rare).",
        {"type": "object", "properties": {"id": {"type": "integer"}, "reason": {"type": "string"}}, "required": ["id"]},
    ),
    Tool(
        "protect",
        "Mark one lesson as protected so no later session can change it.",
        {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]},
    ),
    Tool(
        "complete",
        "End the session. Zero changes is a good outcome.",
        {"type": "object", "properties": {"summary": {"type": "string"}}},
    ),
]


class RefusedError(Exception):
    """The action is not allowed; the message goes back to the model and into the run's record."""


class InvalidCall(Exception):
    """The arguments are malformed; the message goes back to the model."""


def mass_of_chars(chars):
    return chars / 4


_WORD = re.compile(r"\w+")


def kept_share(source, merged):
    """The share of a lesson's words that a consolidated text still holds (1.0: nothing was lost)."""
    words = set(_WORD.findall(source.casefold()))
    if not words:
        return 1.0
    return len(words & set(_WORD.findall(merged.casefold()))) / len(words)


@dataclass
class Staged:
    id: object  # int for existing lessons, "new-N" for lessons created in this session
    category: str
    text: str
    relevance: str
    protected: bool
    status: str = LessonStatus.ACTIVE

    def view(self):
        return {
            "id": self.id,
            "category": self.category,
            "text": self.text,
            "protected": self.protected,
            "status": self.status,
        }


@dataclass
class StagedOp:
    action: str
    args: dict
    new_id: str = ""
    seq: int = 0


@dataclass
class RefinementSession:
    run: RefinementRun
    lessons: dict = field(default_factory=dict)
    originals: dict = field(default_factory=dict)
    ops: list = field(default_factory=list)
    seq: int = 0
    chars_before: int = 0
    terminated: bool = False
    finished: bool = False
    new_counter: int = 0

    @classmethod
    def load(cls, run):
        session = cls(run=run)
        for lesson in Lesson.objects.filter(memory_id=run.memory_id, tier=Tier.CORE, status=LessonStatus.ACTIVE):
            session.lessons[lesson.pk] = Staged(
                lesson.pk, lesson.category, lesson.text, lesson.relevance, lesson.protected
            )
            session.originals[lesson.pk] = lesson_fingerprint(lesson)
        session.chars_before = session.active_chars()
        return session

    # --- measures ---------------------------------------------------------------------------

    def active_chars(self):
        return sum(len(s.text) for s in self.lessons.values() if s.status == LessonStatus.ACTIVE)

    def retained_chars(self):
        """Characters the session keeps: active lessons as they stand, except that a lesson created by a
        consolidation counts as the text of the merged lessons it still holds, not as its own length."""
        merges = [op for op in self.ops if op.action == "consolidate"]
        created = {op.new_id for op in merges}
        kept = sum(
            len(s.text) for s in self.lessons.values() if s.status == LessonStatus.ACTIVE and s.id not in created
        )
        for op in merges:
            merged_text = self.lessons[op.new_id].text
            kept += sum(
                len(self.lessons[i].text) * kept_share(self.lessons[i].text, merged_text) for i in op.args["ids"]
            )
        return kept

    def retention(self):
        if self.chars_before == 0:
            return 1.0
        return self.retained_chars() / self.chars_before

    @property
    def ops_used(self):
        return len(self.ops)

    def should_stop(self):
        return self.terminated or self.finished

    # --- the handler ------------------------------------------------------------------------

    def handle(self, call: ToolCall) -> ToolResult:
        args = call.arguments if isinstance(call.arguments, dict) else {}
        if self.terminated:
            self._record(call.name, args, RefinementOperation.Outcome.REFUSED, reason=TERMINATION_ERROR)
            return ToolResult(call.id, TERMINATION_ERROR, is_error=True)
        if not self._still_running():
            self.terminated = True
            return ToolResult(call.id, TERMINATION_ERROR, is_error=True)
        mutating = call.name in MUTATING
        try:
            if call.name == "search":
                found = self._search(args)
                self._record("search", args, RefinementOperation.Outcome.APPLIED, after=found)
                return ToolResult(call.id, json.dumps({"lessons": found}))
            if call.name == "complete":
                self.finished = True
                self._record("complete", args, RefinementOperation.Outcome.APPLIED)
                return ToolResult(call.id, f"Session complete with {self.ops_used} change(s).")
            if not mutating:
                raise InvalidCall(f"unknown tool {call.name!r}; use one of: " + ", ".join(t.name for t in TOOLS))
            if self.ops_used >= self.run.op_cap:
                raise RefusedError(
                    f"refused: the cap of {self.run.op_cap} changing actions per session is reached; this "
                    "action was not applied. Call complete."
                )
            before, after, message = getattr(self, f"_{call.name}")(args)
        except RefusedError as exc:
            self._record(call.name, args, RefinementOperation.Outcome.REFUSED, reason=str(exc), mutating=mutating)
            return ToolResult(call.id, str(exc), is_error=True)
        except InvalidCall as exc:
            self._record(call.name, args, RefinementOperation.Outcome.ERROR, reason=str(exc), mutating=mutating)
            return ToolResult(call.id, f"error: {exc}", is_error=True)

        retention = self.retention()
        op = self._record(
            call.name,
            args,
            RefinementOperation.Outcome.APPLIED,
            before=before,
            after=after,
            mutating=True,
            retention=retention,
        )
        self.ops[-1].seq = op.seq
        if retention < self.run.threshold:
            self._terminate(retention, op)
            return ToolResult(
                call.id,
                f"{TERMINATED_MESSAGE}: memory would keep {retention:.1%} of its mass, below the "
                f"{self.run.threshold:.0%} threshold. Every change of this session was undone.",
                is_error=True,
            )
        return ToolResult(
            call.id, f"{message} ({self.ops_used}/{self.run.op_cap} changes used, retention {retention:.1%})."
        )

    # --- actions (on the staged copy only) ----------------------------------------------------

    def _search(self, args):
        query = args.get("query")
        if not isinstance(query, str) or not query.strip():
            raise InvalidCall("search needs a non-empty 'query' string")
        words = query.casefold().split()
        hits = [
            s.view()
            for s in self.lessons.values()
            if s.status == LessonStatus.ACTIVE and all(w in s.text.casefold() for w in words)
        ]
        return hits[:25]

    def _target(self, raw, verb):
        if isinstance(raw, bool) or not isinstance(raw, (int, str)):
            raise InvalidCall(f"{verb} needs a lesson id (an integer)")
        if isinstance(raw, str) and raw.startswith("new-"):
            if raw in self.lessons:
                raise RefusedError(f"refused: lesson {raw} was created in this session; change it in a later one")
            raise InvalidCall(f"no lesson {raw} in this memory's core tier")
        try:
            key = int(raw)
        except ValueError:
            raise InvalidCall(f"{raw!r} is not a lesson id") from None
        staged = self.lessons.get(key)
        if staged is None:
            raise InvalidCall(f"no active core lesson {key} in this memory")
        if staged.status != LessonStatus.ACTIVE:
            raise InvalidCall(f"lesson {key} was already {staged.status} in this session")
        if staged.protected and verb != "protect":
            raise RefusedError(f"refused: lesson {key} is protected and cannot be {verb}d")
        return staged

    def _text(self, args, category):
        text = args.get("text")
        if not isinstance(text, str):
            raise InvalidCall("'text' must be a string")
        text = text.strip()
        try:
            services.validate_lesson_fields(
                tier=Tier.CORE, category=category or "PATTERN", text=text, relevance=Relevance.MEDIUM
            )
        except ValidationError as exc:
            raise InvalidCall("; ".join(exc.messages)) from None
        return text

    def _consolidate(self, args):
        ids = args.get("ids")
        if not isinstance(ids, list) or len(ids) < 2:
            raise InvalidCall("consolidate needs 'ids': a list of at least two lesson ids")
        if len({str(i) for i in ids}) != len(ids):
            raise InvalidCall("consolidate got the same id twice")
        targets = [self._target(i, "consolidate") for i in ids]
        keep = max(targets, key=lambda s: len(s.text))
        category = keep.category if keep.category in CORE_CATEGORIES else "PATTERN"
        text = self._text(args, category)
        before = [s.view() for s in targets]
        self.new_counter += 1
        new_id = f"new-{self.new_counter}"
        relevance = Relevance.highest(s.relevance for s in targets)
        for s in targets:
            s.status = LessonStatus.SUPERSEDED
        self.lessons[new_id] = Staged(new_id, category, text, relevance, False)
        self.ops.append(
            StagedOp(
                "consolidate",
                {"ids": [s.id for s in targets], "text": text, "category": category, "relevance": relevance},
                new_id,
            )
        )
        after = [s.view() for s in targets] + [self.lessons[new_id].view()]
        return before, after, f"Consolidated {len(targets)} lessons into {new_id}"

    def _update(self, args):
        staged = self._target(args.get("id"), "update")
        text = self._text(args, staged.category)
        if text == staged.text:
            raise InvalidCall(f"lesson {staged.id} already has this text")
        before = [staged.view()]
        staged.text = text
        self.ops.append(StagedOp("update", {"id": staged.id, "text": text}))
        return before, [staged.view()], f"Updated lesson {staged.id}"

    def _delete(self, args):
        staged = self._target(args.get("id"), "delete")
        before = [staged.view()]
        staged.status = LessonStatus.DELETED
        reason = args.get("reason") if isinstance(args.get("reason"), str) else ""
        self.ops.append(StagedOp("delete", {"id": staged.id, "reason": reason[:500]}))
        return before, [staged.view()], f"Deleted lesson {staged.id}"

    def _protect(self, args):
        staged = self._target(args.get("id"), "protect")
        if staged.protected:
            raise InvalidCall(f"lesson {staged.id} is already protected")
        before = [staged.view()]
        staged.protected = True
        self.ops.append(StagedOp("protect", {"id": staged.id}))
        return before, [staged.view()], f"Protected lesson {staged.id}"

    # --- bookkeeping ----------------------------------------------------------------------------

    def _still_running(self):
        status = RefinementRun.objects.filter(pk=self.run.pk).values_list("status", flat=True).first()
        return status == RefinementRun.Status.RUNNING

    def _record(self, action, args, outcome, *, before=(), after=(), reason="", mutating=False, retention=None):
        self.seq += 1
        op = RefinementOperation.objects.create(
            run=self.run,
            seq=self.seq,
            action=str(action)[:20],
            arguments=_jsonable(args),
            before=list(before),
            after=list(after),
            outcome=outcome,
            mutating=mutating,
            refusal_reason=reason,
            retention_after=retention,
        )
        label = f"{action} ({outcome})" if outcome != RefinementOperation.Outcome.APPLIED else str(action)
        fields = {
            "ops_used": self.ops_used,
            "current_action": f"#{self.seq} {label}"[:200],
            "heartbeat_at": timezone.now(),
        }
        if retention is not None:
            fields["retention"] = retention
            fields["mass_counted"] = int(mass_of_chars(self.retained_chars()))
        RefinementRun.objects.filter(pk=self.run.pk, status=RefinementRun.Status.RUNNING).update(**fields)
        for key, value in fields.items():
            setattr(self.run, key, value)
        return op

    def _terminate(self, retention, op):
        self.terminated = True
        self.ops = []
        run = self.run
        RefinementOperation.objects.filter(run=run, outcome=RefinementOperation.Outcome.APPLIED, mutating=True).update(
            outcome=RefinementOperation.Outcome.ROLLED_BACK
        )
        finish_run(
            run,
            RefinementRun.Status.TERMINATED,
            retention=retention,
            mass_after=run.mass_before,
            current_action=f"terminated at #{op.seq}: retention {retention:.1%} below {run.threshold:.0%}",
            error=(
                f"Retention fell to {retention:.1%} (threshold {run.threshold:.0%}) after operation "
                f"#{op.seq}; every operation of the run was rolled back."
            ),
        )


def _jsonable(value):
    try:
        return json.loads(json.dumps(value, default=str))
    except (TypeError, ValueError):
        return {"raw": str(value)[:2000]}


def lesson_fingerprint(lesson):
    return (lesson.text, lesson.status, lesson.protected, lesson.tier, lesson.category)


def finish_run(run, status, **fields):
    """Move a running run to its final status (no-op if something else already ended it)."""
    fields.setdefault("finished_at", timezone.now())
    fields["heartbeat_at"] = timezone.now()
    with transaction.atomic():
        updated = RefinementRun.objects.filter(pk=run.pk, status=RefinementRun.Status.RUNNING).update(
            status=status, **fields
        )
        if updated:
            run.status = status
            for key, value in fields.items():
                setattr(run, key, value)
            if status in (RefinementRun.Status.TERMINATED, RefinementRun.Status.FAILED):
                announce_run(run, "review.waiting")
    return bool(updated)
