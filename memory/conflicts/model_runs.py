"""Writes of the model engine for conflicts: one run over a memory, outside any transaction.

The offline pass (services.conflicts_detect) queues this run once it has committed, with the same
lessons (model.conflicts_model_request). The run sends the lessons the model has not compared yet
(model.py: batched and budgeted), then stores in one short transaction what it found: a pair not
proposed before becomes a LessonConflict with the model's reason (engine: the provider); a pair the
offline detector already proposed and that still waits keeps its row, which then names both engines
and carries the model's reason too; a pair decided before (same fingerprint) is left alone. The
lessons of every call whose answer was read are recorded as compared (ConflictModelCheck), so the
next run, nightly included, sends only new and edited lessons; a failed call leaves its lessons for
the next run.
"""

import logging
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from types import SimpleNamespace

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from memory import services
from memory.conflicts import model
from memory.conflicts.services import _announce
from memory.engines.base import EngineError
from memory.engines.registry import get_engine
from memory.models import (
    ConflictModelCheck,
    Lesson,
    LessonConflict,
    LessonRef,
    LessonStatus,
    Memory,
    conflict_fingerprint,
)

logger = logging.getLogger(__name__)


@dataclass
class ModelRun:
    engine: str
    lessons_to_check: int = 0
    checked: int = 0
    postponed: int = 0
    calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    created: int = 0
    confirmed: int = 0  # waiting conflicts of the offline detector the model found too
    errors: list = field(default_factory=list)
    notes: list = field(default_factory=list)

    @property
    def message(self):
        text = (
            f"{self.engine}: {self.created} new conflict{'s' if self.created != 1 else ''}, {self.confirmed} "
            f"also found offline; {self.checked} of {self.lessons_to_check} lessons compared in {self.calls} "
            f"call{'s' if self.calls != 1 else ''} ({self.tokens_in + self.tokens_out:,} tokens)"
        )
        if self.postponed:
            text += f"; {self.postponed} left for the next run"
        return text + "." + "".join(f" {line}." for line in self.errors + self.notes)

    def as_dict(self):
        return asdict(self)


def conflict_engine(memory: Memory):
    """The engine CONFLICTS_ENGINE names for this memory, or None for the offline detector alone."""
    if not model.model_engine_configured():
        return None
    return get_engine(memory.persona, memory=memory, provider=settings.CONFLICTS_ENGINE, model=settings.CONFLICTS_MODEL)


def _lessons(memory: Memory) -> tuple[list, dict[int, str]]:
    rows = Lesson.objects.filter(memory=memory, status=LessonStatus.ACTIVE).values_list(
        "id", "text", "lesson_date", "tier", "category", "content_hash"
    )
    paths = defaultdict(list)
    for lesson_id, path in (
        LessonRef.objects.filter(lesson__memory=memory, lesson__status=LessonStatus.ACTIVE)
        .order_by("lesson_id", "position", "id")
        .values_list("lesson_id", "path")
    ):
        paths[lesson_id].append(path)
    lessons, hashes = [], {}
    for pk, text, day, tier, category, content_hash in rows:
        lessons.append(
            SimpleNamespace(id=pk, text=text, lesson_date=day, tier=tier, category=category, paths=tuple(paths[pk]))
        )
        hashes[pk] = content_hash
    lessons.sort(key=lambda lesson: lesson.id)
    return lessons, hashes


def conflicts_model_detect(*, memory: Memory, lesson_ids=None, engine=None) -> ModelRun | None:
    """Compare `lesson_ids` (None: every active lesson) that the model has not compared yet, as they
    read now, with the rest of the memory, and store what it finds. None when no model engine is
    configured. A failed call or an unreadable answer is recorded on the run and in the LLM call
    log; what the offline detector stored is never touched by it."""
    if engine is None:
        try:
            engine = conflict_engine(memory)
        except EngineError as exc:
            logger.warning("conflict model engine for memory %s could not start: %s", memory.pk, exc)
            return None
        if engine is None:
            return None
    provider = str(getattr(engine, "provider", "model"))[:40]
    lessons, hashes = _lessons(memory)
    checked = dict(
        ConflictModelCheck.objects.filter(memory=memory, engine=provider).values_list("lesson_id", "content_hash")
    )
    wanted = hashes.keys() if lesson_ids is None else [i for i in lesson_ids if i in hashes]
    to_check = sorted(i for i in set(wanted) if checked.get(i) != hashes[i])
    run = ModelRun(engine=provider, lessons_to_check=len(to_check))
    if not to_check:
        return run
    recorder = getattr(engine, "recorder", None)
    since = len(recorder.calls) if recorder is not None else 0
    outcome = model.find(engine, lessons, to_check, model.Budget.from_settings())
    by_id = {lesson.id: lesson for lesson in lessons}
    run.created, run.confirmed = _store(memory, provider, outcome, by_id, hashes)
    if recorder is not None:
        run.calls, run.tokens_in, run.tokens_out = recorder.totals(since)
    run.checked, run.postponed = len(outcome.checked), len(outcome.postponed)
    run.errors, run.notes = outcome.errors, outcome.notes
    (logger.warning if run.errors else logger.info)("conflict detection, memory %s: %s", memory.pk, run.message)
    return run


@transaction.atomic
def _store(memory: Memory, provider: str, outcome: model.Outcome, by_id: dict, hashes: dict) -> tuple[int, int]:
    ids = {i for f in outcome.findings for i in (f.older_id, f.newer_id)} | {lesson.id for lesson in outcome.checked}
    # A lesson edited or retired while the model was answering: its findings are about a text that is gone.
    current = dict(Lesson.objects.filter(pk__in=ids, status=LessonStatus.ACTIVE).values_list("id", "content_hash"))
    unchanged = {i for i in ids if current.get(i) == hashes.get(i)}
    findings = [f for f in outcome.findings if f.older_id in unchanged and f.newer_id in unchanged]
    prints = {f: conflict_fingerprint(by_id[f.older_id].text, by_id[f.newer_id].text) for f in findings}
    known = {
        c.fingerprint: c
        for c in LessonConflict.objects.filter(memory=memory, fingerprint__in=set(prints.values())).order_by("id")
    }
    created, confirmed = [], []
    for finding in findings:
        fingerprint = prints[finding]
        existing = known.get(fingerprint)
        if existing is None:
            known[fingerprint] = conflict = LessonConflict(
                memory=memory,
                older_id=finding.older_id,
                newer_id=finding.newer_id,
                relation=finding.relation,
                engine=provider,
                evidence=finding.evidence,
                fingerprint=fingerprint,
            )
            created.append(conflict)
        elif (
            existing.pk
            and existing.status == LessonConflict.Status.PENDING
            and provider not in existing.engine.split("+")
        ):
            existing.engine = f"{existing.engine}+{provider}"[:40]
            existing.evidence = f"{existing.evidence}\n{provider}: {finding.evidence}".strip()
            confirmed.append(existing)
    LessonConflict.objects.bulk_create(created)
    LessonConflict.objects.bulk_update(confirmed, ["engine", "evidence"])
    if created and created[0].pk is not None:
        _announce("review.waiting", created)
    now = timezone.now()
    ConflictModelCheck.objects.bulk_create(
        [
            ConflictModelCheck(
                memory=memory, lesson_id=lesson.id, engine=provider, content_hash=hashes[lesson.id], checked_at=now
            )
            for lesson in outcome.checked
            if lesson.id in unchanged
        ],
        update_conflicts=True,
        unique_fields=["lesson", "engine"],
        update_fields=["content_hash", "checked_at"],
    )
    if created:
        services.memory_bump_version(memory)  # compiled memory now marks the older lines
    return len(created), len(confirmed)


def conflicts_model_checks_clear(*, memory: Memory) -> int:
    """Forget what the model has compared in this memory, so its next run compares every lesson."""
    deleted, _ = ConflictModelCheck.objects.filter(memory=memory).delete()
    return deleted
