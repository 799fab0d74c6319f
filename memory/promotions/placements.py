"""Where the model placed each working lesson of a memory: its groups and the lessons it left alone.

Detection shows the model only the lessons it has not placed yet; an accepted batch of its answer is
stored here at once, so a run that stops half-way keeps what was already placed.
"""

import math
from collections.abc import Sequence
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from memory.engines.base import Engine
from memory.models import Lesson, LessonStatus, Memory, ModelGroup, ModelPlacement, Tier
from memory.promotions import proposals
from memory.promotions.detection import LessonFacts


def lesson_rows(lesson_ids: Sequence[int], *fields: str) -> dict[int, list[Any]]:
    """{id: (fields...)} of these lessons, in chunks that stay under SQLite's parameter limit."""
    found: dict[int, list[Any]] = {}
    for chunk in range(0, len(lesson_ids), 900):
        for pk, *values in Lesson.objects.filter(pk__in=lesson_ids[chunk : chunk + 900]).values_list("id", *fields):
            found[pk] = values
    return found


def placements_load(memory: Memory, facts: Sequence[LessonFacts]) -> proposals.Placements:
    """What the model has placed in this memory. A lesson edited since it was placed counts as not
    placed: its placement is removed here, so it is shown to the model again."""
    current = {f.id: f.text_key for f in facts}
    rows = list(ModelPlacement.objects.filter(memory=memory).values_list("id", "lesson_id", "group_id", "content_hash"))
    edited = [pk for pk, lesson_id, _, key in rows if lesson_id in current and current[lesson_id] != key]
    if edited:
        ModelPlacement.objects.filter(pk__in=edited).delete()
    groups = {
        pk: proposals.ModelGroupState(ids=set(), summary=summary, reason=reason, pk=pk, touched=n)
        for n, (pk, summary, reason) in enumerate(
            ModelGroup.objects.filter(memory=memory)
            .order_by("updated_at", "id")
            .values_list("id", "summary", "reason"),
            start=1,
        )
    }
    edited_ids = set(edited)
    placed: set[int] = set()
    for pk, lesson_id, group_id, _ in rows:
        if pk in edited_ids:
            continue
        placed.add(lesson_id)
        if group_id in groups and lesson_id in current:
            groups[group_id].ids.add(lesson_id)
    # A group whose lessons all left working memory (promoted, deleted) is no longer offered.
    state = proposals.Placements(groups=[g for g in groups.values() if g.ids], placed=placed)
    # The newest lessons the model left alone, as many as could be offered as context in one batch.
    enough = math.ceil(settings.PROMOTION_PROPOSAL_BATCH_TOKENS / 10)
    for pk, text, day, undated in (
        Lesson.objects.filter(
            model_placement__memory=memory,
            model_placement__group__isnull=True,
            tier=Tier.WORKING,
            status=LessonStatus.ACTIVE,
        )
        .order_by("-lesson_date", "-id")
        .values_list("id", "text", "lesson_date", "undated")[:enough]
    ):
        state.lone[pk] = proposals.Item(id=pk, day=None if undated else day, text=text)
    return state


@transaction.atomic
def _store_placements(
    memory: Memory, batch: proposals.Batch, changed: list[proposals.ModelGroupState], hashes: dict[int, str]
) -> None:
    """Keep one accepted batch: its new and changed groups and where each of its lessons went."""
    Memory.objects.select_for_update().filter(pk=memory.pk).first()  # one writer per memory, as detection
    now = timezone.now()
    for group in changed:
        if group.pk is None:
            group.pk = ModelGroup.objects.create(
                memory=memory, summary=group.summary, reason=group.reason, created_at=now, updated_at=now
            ).pk
        else:
            ModelGroup.objects.filter(pk=group.pk).update(reason=group.reason, updated_at=now)
    owner = {i: group.pk for group in changed for i in group.ids}
    ids = [item.id for item in batch.items]
    for group in changed:
        joined = [item.id for item in batch.earlier if item.id in group.ids]
        if joined:
            ModelPlacement.objects.filter(lesson_id__in=joined).update(group_id=group.pk)
    ModelPlacement.objects.filter(lesson_id__in=ids).delete()
    ModelPlacement.objects.bulk_create(
        [
            ModelPlacement(memory=memory, lesson_id=i, group_id=owner.get(i), content_hash=hashes[i], placed_at=now)
            for i in ids
        ],
        batch_size=500,
    )


def model_groups(
    memory: Memory, facts: Sequence[LessonFacts], engine: Engine, budget: proposals.Budget, place_new: bool = True
) -> tuple[list[proposals.ModelGroupState], int]:
    """The model's groups of this memory, after showing it the lessons it has not placed yet (or, with
    place_new=False, as placed so far, without calling the model)."""
    state = placements_load(memory, facts)
    if not place_new:
        return state.groups, 0
    unplaced = [f for f in facts if f.id not in state.placed]
    rows = lesson_rows([f.id for f in unplaced], "text", "lesson_date", "undated")
    items = [
        proposals.Item(id=pk, day=None if undated else day, text=text)
        for pk, (text, day, undated) in sorted(rows.items())
    ]
    hashes = {f.id: f.text_key for f in facts}
    sent = proposals.place(
        engine,
        items,
        state,
        budget=budget,
        batch_tokens=settings.PROMOTION_PROPOSAL_BATCH_TOKENS,
        max_output_tokens=settings.PROMOTION_PROPOSAL_MAX_OUTPUT_TOKENS,
        on_batch=lambda batch, changed: _store_placements(memory, batch, changed, hashes),
    )
    return state.groups, len(items) if sent else 0
