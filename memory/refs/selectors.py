"""Reads of ref checking: what waits for review, and the state of a memory's refs for its page."""

from dataclasses import dataclass
from typing import TYPE_CHECKING

from django.db.models import Count

from memory.access import EVERY_MEMORY, MemoryIds
from memory.models import LessonRef, LessonStatus, Memory, RefCheck
from memory.refs.git import has_checkout_configured
from memory.refs.models import NEEDS_REVIEW, RefStatus

if TYPE_CHECKING:
    from personas.models import Project


def refs_needing_review_count(memory_ids: MemoryIds) -> dict[int, int]:
    """{memory_id: refs of active lessons that moved, changed or whose file is gone}; one query.

    memory_ids limits the question to those memories (EVERY_MEMORY: all); memories with none are absent.
    """
    # anchor not null, implied by the join but said: PostgreSQL then reads the refs through their partial
    # index on anchor (a few rows) instead of joining every ref to every lesson (a million, at scale).
    refs = LessonRef.objects.filter(
        anchor__isnull=False, lesson__status=LessonStatus.ACTIVE, anchor__status__in=NEEDS_REVIEW
    )
    if memory_ids is not EVERY_MEMORY:
        refs = refs.filter(lesson__memory_id__in=memory_ids)
    return dict(refs.values_list("lesson__memory_id").annotate(n=Count("id")).values_list("lesson__memory_id", "n"))


@dataclass
class RefsPanel:
    configured: bool
    last_check: RefCheck | None
    counts: dict[str | None, int]

    @property
    def needs_review(self) -> int:
        return sum(self.counts.get(s, 0) for s in NEEDS_REVIEW)

    @property
    def moved(self) -> int:
        return self.counts.get(RefStatus.MOVED, 0)

    @property
    def total(self) -> int:
        return sum(self.counts.values())


def refs_panel(memory: Memory) -> RefsPanel:
    """What the memory page says about its refs: two queries."""
    counts: dict[str | None, int] = dict(  # an unanchored ref has no status
        LessonRef.objects.filter(lesson__memory=memory, lesson__status=LessonStatus.ACTIVE)
        .values_list("anchor__status")
        .annotate(n=Count("id"))
        .values_list("anchor__status", "n")
    )
    counts[RefStatus.UNANCHORED] = counts.get(RefStatus.UNANCHORED, 0) + counts.pop(None, 0)
    last = RefCheck.objects.filter(project_id=memory.project_id).order_by("-started_at", "-id").first()
    return RefsPanel(configured=has_checkout_configured(memory.project), last_check=last, counts=counts)


def ref_permalink(project: "Project", ref: LessonRef) -> str | None:
    """A link to the ref's lines at the commit they were last verified at (not a moving branch)."""
    anchor = ref.anchor if ref.anchor_id else None
    commit = anchor.commit if anchor is not None else ""
    return project.permalink(ref.path, ref.start_line, ref.end_line, commit=commit or None)
