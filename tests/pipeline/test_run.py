"""A whole run, from a transcript to pending candidates and a proposal of drops."""

from memory import services
from memory.compaction.services import compaction_apply
from memory.models import (
    ChangeBatch,
    CompactionProposal,
    Lesson,
    PipelineRun,
    PromotionCandidate,
)
from memory.pipeline.coverage import coverage_counts
from tests.factories import make_lesson
from tests.pipeline.helpers import make_interaction, run_pipeline


def ids_of(memory, *texts):
    return [str(Lesson.objects.get(memory=memory, text=t).pk) for t in texts]


def test_scripted_run_from_transcript_to_candidates_and_drop_proposal(memory, scripted_engine, approver):
    memory.working_char_budget = 100
    memory.save()
    old = make_lesson(memory, "Old note: the queue worker was restarted by hand.", relevance="low")
    interaction = make_interaction(memory)
    scripted_engine(
        turns=[
            # observer
            [
                (
                    "record_observations",
                    {
                        "observations": [
                            {
                                "timestamp": "2026-03-02 09:15",
                                "content": "User decided to use Postgres advisory locks for the queue.",
                                "relevance": "high",
                                "sourceEntryIds": ["m1"],
                            },
                            {
                                "timestamp": "2026-03-02 09:17",
                                "content": "completed: advisory locks in the queue worker; tests pass.",
                                "relevance": "medium",
                                "sourceEntryIds": ["m2", "m1"],
                            },
                            {
                                "timestamp": "2026-03-02 09:20",
                                "content": "User said never push directly to main.",
                                "relevance": "critical",
                                "sourceEntryIds": ["m3"],
                            },
                            {
                                "timestamp": "2026-03-02 09:20",
                                "content": "Invented.",
                                "relevance": "low",
                                "sourceEntryIds": ["m9"],
                            },
                        ]
                    },
                )
            ],
            "Covered.",
            # reflector pass 1
            lambda h: [
                (
                    "record_reflections",
                    {
                        "reflections": [
                            {
                                "content": "The job queue relies on Postgres advisory locks.",
                                "supportingObservationIds": ids_of(
                                    memory,
                                    "User decided to use Postgres advisory locks for the queue.",
                                    "completed: advisory locks in the queue worker; tests pass.",
                                ),
                            },
                        ]
                    },
                )
            ],
            "Done.",
            # reflector pass 2: single facts, and more support for the first reflection
            lambda h: [
                (
                    "record_reflections",
                    {
                        "reflections": [
                            {
                                "content": "Nobody pushes directly to main.",
                                "supportingObservationIds": ids_of(memory, "User said never push directly to main."),
                            },
                            {
                                "content": "The job queue relies on Postgres advisory locks.",
                                "supportingObservationIds": [str(old.pk)],
                            },
                        ]
                    },
                )
            ],
            "Done.",
            # pruner pass 1: the model asks for a critical drop too; it is refused
            lambda h: [
                (
                    "drop_observations",
                    {
                        "ids": [
                            str(old.pk),
                            *ids_of(
                                memory,
                                "User said never push directly to main.",
                                "completed: advisory locks in the queue worker; tests pass.",
                            ),
                        ]
                    },
                )
            ],
            "Pruned.",
            "Nothing else is safe to drop.",  # pruner pass 2 ends with no drop
        ]
    )
    run = run_pipeline(memory, interaction)
    run.refresh_from_db()
    assert run.status == PipelineRun.Status.COMPLETED, run.error
    assert run.completed_phases == ["observer", "reflector", "pruner"]
    assert (run.observations_added, run.rejected) == (3, 1)
    assert (run.reflections_added, run.reflections_merged, run.observations_dropped) == (2, 1, 2)
    assert (run.starting_observations, run.starting_reflections) == (4, 0)
    assert run.tool_calls == 4

    observations = Lesson.objects.filter(memory=memory, interaction=interaction).order_by("id")
    assert [o.source_entry_ids for o in observations] == [["m1"], ["m1", "m2"], ["m3"]]
    assert {o.category for o in observations} == {"OBSERVATION"}
    assert observations[0].observed_at.strftime("%H:%M") == "09:15"
    assert ChangeBatch.objects.filter(memory=memory, kind=ChangeBatch.Kind.PIPELINE).count() == 1

    candidates = {c.text: c for c in PromotionCandidate.objects.filter(memory=memory, status="pending")}
    queue = candidates["The job queue relies on Postgres advisory locks."]
    # The model offered the old note as more support in pass 2; detection's similarity test does not
    # put a note about restarting the worker with the two about advisory locks, so it is not added.
    assert len(queue.evidence["lessons"]) == 2 and queue.evidence["source"] == "reflector"
    assert old.pk not in queue.evidence["lessons"]
    assert set(queue.supporting.values_list("pk", flat=True)) == set(queue.evidence["lessons"])
    assert queue.category in ("PATTERN", "DECISION", "ARCHITECTURE")
    assert coverage_counts(memory).get(old.pk, 0) == 0

    proposal = CompactionProposal.objects.get(pk=run.proposal_id)
    assert proposal.status == "pending" and proposal.trigger == "pruning" and proposal.validation_errors == []
    dropped = set(proposal.drops.values_list("lesson_id", flat=True))
    assert old.pk in dropped and len(dropped) == 2
    assert {line.kind for line in proposal.lines.all()} == {"kept"}
    assert proposal.lines.count() == 2
    assert Lesson.objects.get(text="User said never push directly to main.").status == "active"

    # Stored through the compaction service like any proposal: it covers what it read, fingerprinted,
    # so a lesson appended while it waits for review neither stales it nor is dropped by it.
    assert set(proposal.input_fingerprints) == {str(i) for i in proposal.input_lesson_ids}
    late = services.lesson_create(
        memory=memory,
        text="Appended after the pruning about src/late.py",
        category="OBSERVATION",
        actor=services.Actor.system(),
    )
    compaction_apply(proposal=proposal, actor=services.Actor.for_user(approver))
    old.refresh_from_db()
    assert old.status == "deleted"
    assert Lesson.objects.get(pk=late.pk).status == "active"


def test_run_with_no_new_content_records_nothing(memory, scripted_engine):
    scripted_engine(turns=["Nothing new in this chunk."])
    run = run_pipeline(memory, make_interaction(memory))
    run.refresh_from_db()
    assert run.status == "completed" and run.observations_added == 0 and run.proposal_id is None
    assert not Lesson.objects.filter(memory=memory).exists()
    assert not ChangeBatch.objects.filter(memory=memory).exists()


def test_offline_run_goes_through_the_same_handlers(memory):
    memory.working_char_budget = 120
    memory.save()
    run = run_pipeline(memory, make_interaction(memory))
    run.refresh_from_db()
    assert run.status == "completed", run.error
    assert run.engine == "offline"
    texts = list(Lesson.objects.filter(memory=memory, tier="working").values_list("text", "relevance"))
    assert len(texts) == 3  # "ok" is not substantive
    assert ("Never push directly to the main branch.", "critical") in texts  # no speaker prefix
    assert PromotionCandidate.objects.filter(memory=memory, status="pending").count() == 1
    proposal = CompactionProposal.objects.get(pk=run.proposal_id)
    assert proposal.validation_errors == []
    critical = Lesson.objects.get(memory=memory, relevance="critical")
    assert not proposal.drops.filter(lesson=critical).exists()


def test_engine_failure_is_recorded_on_the_run(memory, scripted_engine):
    from memory.engines.base import EngineError

    scripted_engine(turns=[EngineError("rate limited")])
    run = run_pipeline(memory, make_interaction(memory))
    run.refresh_from_db()
    assert run.status == "failed" and "rate limited" in run.error


def test_reflections_to_core_go_straight_to_core_revertibly(memory, scripted_engine):
    memory.reflections_to_core = True
    memory.save()
    a = make_lesson(memory, "Deploys run on Fridays.")
    b = make_lesson(memory, "Friday deploy went fine.")
    scripted_engine(
        turns=[
            "Nothing new.",
            [
                (
                    "record_reflections",
                    {
                        "reflections": [
                            {
                                "content": "Deploys happen on Fridays.",
                                "supportingObservationIds": [str(a.pk), str(b.pk)],
                            }
                        ]
                    },
                )
            ],
        ]
    )
    run = run_pipeline(memory)
    run.refresh_from_db()
    core = Lesson.objects.get(memory=memory, tier="core")
    assert core.text == "Deploys happen on Fridays."
    assert set(core.derived_from.values_list("pk", flat=True)) == {a.pk, b.pk}
    assert not PromotionCandidate.objects.filter(memory=memory).exists()
    services.batch_revert(batch=run.batch, actor=services.Actor.system("test"))
    core.refresh_from_db()
    assert core.status == "deleted"


def test_repeating_a_core_lessons_text_adds_to_what_it_derives_from(memory, scripted_engine):
    core = make_lesson(memory, "Deploys happen on Fridays.", tier="core", category="PATTERN")
    a = make_lesson(memory, "Deployed on Friday again.")
    scripted_engine(
        turns=[
            [
                (
                    "record_reflections",
                    {
                        "reflections": [
                            {"content": "Deploys happen on Fridays.", "supportingObservationIds": [str(a.pk)]}
                        ]
                    },
                )
            ]
        ]
    )
    run = run_pipeline(memory)
    run.refresh_from_db()
    assert (run.reflections_added, run.reflections_merged) == (0, 1)
    assert list(core.derived_from.values_list("pk", flat=True)) == [a.pk]
    assert not PromotionCandidate.objects.filter(memory=memory).exists()
    assert coverage_counts(memory) == {a.pk: 1}


def test_an_unexpected_error_marks_the_run_failed(memory, scripted_engine, monkeypatch):
    import pytest

    from memory.pipeline import phases as pipeline_phases

    def boom(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(pipeline_phases, "_store_observations", boom)
    scripted_engine(
        turns=[
            [
                (
                    "record_observations",
                    {
                        "observations": [
                            {
                                "timestamp": "2026-03-02 09:15",
                                "content": "x happened",
                                "relevance": "low",
                                "sourceEntryIds": ["m1"],
                            }
                        ]
                    },
                )
            ]
        ]
    )
    with pytest.raises(RuntimeError):
        run_pipeline(memory, make_interaction(memory))
    run = PipelineRun.objects.get()
    assert run.status == "failed" and "RuntimeError" in run.error and run.finished_at is not None


def test_a_reflection_stays_approvable_after_its_observations_are_pruned(memory, scripted_engine, approver):
    from memory.promotions.services import promotion_approve, promotion_detect

    memory.working_char_budget = 40
    memory.save()
    a = make_lesson(memory, "Deploy on Friday went fine.", relevance="low")
    b = make_lesson(memory, "Another Friday deploy went fine.", relevance="low")
    scripted_engine(
        turns=[
            [
                (
                    "record_reflections",
                    {
                        "reflections": [
                            {
                                "content": "Friday deploys are routine.",
                                "supportingObservationIds": [str(a.pk), str(b.pk)],
                            }
                        ]
                    },
                )
            ],
            "Done.",
            "Done.",
            [("drop_observations", {"ids": [str(a.pk)]})],
            "Done.",
            "Done.",
        ]
    )
    run = run_pipeline(memory)
    run.refresh_from_db()
    actor = services.Actor.for_user(approver)
    compaction_apply(proposal=CompactionProposal.objects.get(pk=run.proposal_id), actor=actor)
    promotion_detect(memory=memory)
    candidate = PromotionCandidate.objects.get(memory=memory, text="Friday deploys are routine.")
    assert candidate.status == "pending"
    result = promotion_approve(candidate=candidate, actor=actor)
    assert set(result.core_lesson.derived_from.values_list("pk", flat=True)) == {a.pk, b.pk}
    a.refresh_from_db()
    b.refresh_from_db()
    assert (a.status, b.status) == ("deleted", "promoted")
