"""The offline compactor: duplicates merged with refs unioned, least useful dropped first, always valid."""

from datetime import date, timedelta

import pytest

from memory.compaction.services import compaction_apply, compaction_propose, compaction_revert
from memory.models import CompactionProposal, Lesson
from tests.compaction.helpers import working_set
from tests.factories import make_lesson

pytestmark = pytest.mark.django_db

START = date(2026, 1, 1)


def test_exact_and_near_duplicates_merge_with_refs_unioned(memory, actor):
    a = make_lesson(memory, "Retry in the queue worker uses a fixed 1s delay", refs="src/queue/worker.ts#L88")
    b = make_lesson(memory, "retry in the queue worker uses a fixed 1s delay.", refs="src/queue/retry.ts#L3")
    c = make_lesson(memory, "Retry in queue worker uses a fixed 1s delay", refs="src/queue/worker.ts#L88")
    other = make_lesson(memory, "Reports endpoint runs one query per row", refs="src/reports/views.py#L12")
    hypo = make_lesson(memory, "Retry in the queue worker uses a fixed 1s delay", category="HYPOTHESIS")

    proposal = compaction_propose(memory=memory, actor=actor)

    assert proposal.engine == "offline" and proposal.validation_errors == []
    lines = list(proposal.lines.all())
    merged = next(line for line in lines if line.kind == "merged")
    assert merged.source_ids == [a.pk, b.pk, c.pk]
    assert merged.refs == ["src/queue/worker.ts#L88", "src/queue/retry.ts#L3"]
    assert [line.source_ids for line in lines if line.kind == "kept"] == [
        [other.pk],
        [hypo.pk],
    ]  # other category: not merged


def test_drops_oldest_low_relevance_first_down_to_the_target(memory, actor):
    memory.compaction_target_lines = 5
    memory.save()
    low_old = [
        make_lesson(
            memory,
            f"Low relevance finding {i} in src/low_{i}.py",
            relevance="low",
            refs=f"src/low_{i}.py#L{i + 1}",
            day=START + timedelta(days=i),
        )
        for i in range(4)
    ]
    medium = [
        make_lesson(memory, f"Medium finding {i} about module {i * 7}", day=START + timedelta(days=i)) for i in range(3)
    ]
    protected = make_lesson(memory, "Protected but low", relevance="low", protected=True, day=START)
    critical = make_lesson(memory, "Critical and old", relevance="critical", day=START)

    proposal = compaction_propose(memory=memory, actor=actor)

    assert proposal.validation_errors == []
    kept_ids = {i for line in proposal.lines.all() for i in line.source_ids}
    assert len(kept_ids) == 5
    assert {protected.pk, critical.pk} <= kept_ids
    assert {lesson.pk for lesson in medium} <= kept_ids
    dropped = {d.lesson_id: d for d in proposal.drops.all()}
    assert set(dropped) == {lesson.pk for lesson in low_old}
    assert all(d.had_refs and d.listed and "low relevance" in d.reason for d in dropped.values())


def test_must_keep_lessons_can_exceed_the_target(memory, actor):
    memory.compaction_target_lines = 1
    memory.save()
    for i in range(3):
        make_lesson(memory, f"Protected lesson {i} about src/p{i}.py", protected=True)
    make_lesson(memory, "Ordinary lesson about src/o.py")
    proposal = compaction_propose(memory=memory, actor=actor)
    assert proposal.validation_errors == [] and proposal.target_lines == 3
    assert proposal.lines.count() == 3


def test_large_memory_compacts_to_target_and_reverts_exactly(memory, actor):
    for i in range(170):
        text = f"Observation {i % 120} about the cache layer in src/cache/mod_{i % 120}.py"
        make_lesson(
            memory,
            text,
            refs=f"src/cache/mod_{i % 120}.py#L{i % 120 + 1}",
            relevance=["low", "medium", "high"][i % 3],
            day=START + timedelta(days=i % 40),
        )
    v1 = make_lesson(memory, "untagged v1 bullet about src/v1.py", protected=True)
    Lesson.objects.filter(pk=v1.pk).update(category="")  # as the importer stores a v1 bullet
    before = working_set(memory)

    proposal = compaction_propose(memory=memory, actor=actor)
    assert proposal.status == CompactionProposal.Status.PENDING, proposal.validation_errors
    assert proposal.lines.count() == 60

    compaction_apply(proposal=proposal, actor=actor)
    assert len(working_set(memory)) == 60
    compaction_revert(proposal=proposal, actor=actor)
    assert working_set(memory) == before


def test_lessons_that_differ_in_a_path_or_number_are_not_merged(memory, actor):
    make_lesson(memory, "Timeout is 30s in src/http/client.py")
    make_lesson(memory, "Timeout is 60s in src/http/client.py")
    make_lesson(memory, "Timeout is 30s in src/http/server.py")
    proposal = compaction_propose(memory=memory, actor=actor)
    assert [line.kind for line in proposal.lines.all()] == ["kept", "kept", "kept"]
