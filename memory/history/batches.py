"""Who writes, the batches that group a write's changes, and the memory's version they bump.

Every write of a memory's lessons or of what compiled memory shows of them bumps its version
through memory_bump_version or memories_bump_version, which count its active lessons again and
clear what the caches keep of the memory (memory/context_cache.py).
"""

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.db.models import Count, F, OuterRef, QuerySet, Subquery
from django.db.models.functions import Coalesce

from memory import context_cache
from memory.history.validation import REASON_MAX_CHARS
from memory.models import ActorType, Change, ChangeBatch, Lesson, LessonStatus, Memory, Tier
from memory.textcheck import check_text


@dataclass(frozen=True)
class Actor:
    type: str
    user: Any = None
    label: str = ""

    @classmethod
    def for_user(cls, user: Any) -> "Actor":
        return cls(ActorType.USER, user=user, label=user.get_username())

    @classmethod
    def agent(cls, token: Any) -> "Actor":
        return cls(ActorType.AGENT, label=f"agent token {token.prefix}")

    @classmethod
    def job(cls, label: str) -> "Actor":
        return cls(ActorType.JOB, label=label)

    @classmethod
    def system(cls, label: str = "system") -> "Actor":
        return cls(ActorType.SYSTEM, label=label)


def batch_build(*, memory: Memory, kind: str, actor: Actor, label: str = "", reason: str = "") -> ChangeBatch:
    """An unsaved ChangeBatch, for writers that create many at once; batch_create saves one."""
    reason = check_text(reason or "", field="reason", multiline=True, max_chars=REASON_MAX_CHARS)
    return ChangeBatch(
        memory=memory,
        kind=kind,
        label=label[:300],
        reason=reason,
        actor_type=actor.type,
        actor_user=actor.user,
        actor_label=actor.label[:200],
    )


def batch_create(*, memory: Memory, kind: str, actor: Actor, label: str = "", reason: str = "") -> ChangeBatch:
    batch = batch_build(memory=memory, kind=kind, actor=actor, label=label, reason=reason)
    batch.save(force_insert=True)
    return batch


def batches_create(batches: list[ChangeBatch]) -> list[ChangeBatch]:
    """Save many batches of batch_build in one statement (an import writes one per memory); returns them."""
    return ChangeBatch.objects.bulk_create(batches)


def record_change(batch: ChangeBatch, lesson: Lesson, action: str, before: Any, after: Any) -> Change:
    return Change.objects.create(
        batch=batch, memory_id=lesson.memory_id, lesson=lesson, action=action, before=before, after=after
    )


def _recount_active_lessons(memories: QuerySet[Memory]) -> None:
    """Count again the active lessons per tier of `memories` (a queryset), in one UPDATE.

    Run after the version bump, as a statement of its own: the bump holds the memory's row lock, so
    on PostgreSQL every other writer of this memory has committed (and this statement's snapshot sees
    its lessons) or waits for this transaction.
    """

    def active(tier: str) -> Coalesce:
        counted = (
            Lesson.objects.filter(memory=OuterRef("pk"), status=LessonStatus.ACTIVE, tier=tier)
            .order_by()
            .values("memory")
            .annotate(n=Count("pk"))
            .values("n")
        )
        return Coalesce(Subquery(counted), 0)

    memories.update(active_core_lessons=active(Tier.CORE), active_working_lessons=active(Tier.WORKING))


def memory_bump_version(memory: Memory) -> int:
    memories = Memory.objects.filter(pk=memory.pk)
    memories.update(version=F("version") + 1)
    _recount_active_lessons(memories)
    memory.refresh_from_db(fields=["version", "active_core_lessons", "active_working_lessons"])
    context_cache.memory_changed(memory)
    return memory.version


def memories_bump_version(memory_ids: Iterable[int]) -> dict[int, int]:
    """memory_bump_version for many memories at once (a bulk import); returns {memory id: new version}."""
    memories = Memory.objects.filter(pk__in=memory_ids)
    memories.update(version=F("version") + 1)
    _recount_active_lessons(memories)
    bumped = list(memories.only("id", "persona_id", "project_id", "version"))
    context_cache.memories_changed(bumped)
    return {memory.pk: memory.version for memory in bumped}


def memory_get_or_create(*, persona: Any, project: Any) -> Memory:
    memory, _ = Memory.objects.get_or_create(persona=persona, project=project)
    return memory
