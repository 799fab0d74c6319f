import pytest

from memory.models import ChangeBatch, Lesson, RefinementOperation, RefinementRun
from memory.refinement.services import RefinementBusy, refinement_run_create
from memory.refinement.session import TERMINATED_MESSAGE, TERMINATION_ERROR

from .helpers import core, run_with, state
from .scripted import ScriptedEngine

pytestmark = pytest.mark.django_db

S = RefinementRun.Status


def big_memory(memory, n=140):
    # Distinct lessons of similar size, the shape of the memory the seed's nuclear run hit.
    return [
        core(
            memory,
            f"Lesson {i:03d}: the deploy script for service {i} must run migrations before "
            f"restarting worker pool {i % 7}",
        )
        for i in range(n)
    ]


def test_nuclear_run_is_stopped_and_memory_is_exactly_as_before(memory):
    lessons = big_memory(memory)
    before = state(memory)
    calls = [("delete", {"id": lesson.pk}) for lesson in lessons[:49]]
    calls += [
        ("consolidate", {"ids": [a.pk, b.pk], "text": f"merged {a.pk} and {b.pk}"})
        for a, b in zip(lessons[49:132:2], lessons[50:133:2])
    ][:83]
    calls += [("consolidate", {"ids": [lessons[i].pk, lessons[i + 1].pk], "text": "x" * 20}) for i in range(0, 84, 2)][
        : 83 - 41
    ]
    engine = ScriptedEngine(calls)
    run = run_with(memory, engine)
    applied = (
        run.operations.filter(mutating=True)
        .exclude(outcome=RefinementOperation.Outcome.REFUSED)
        .exclude(outcome=RefinementOperation.Outcome.ERROR)
        .count()
    )
    assert applied <= 10
    # 140 lessons of equal size: each delete keeps ~99.3%, so the breaker does not trip within
    # the cap; the cap refuses everything after the 10th change.
    assert run.status == S.COMPLETED
    refused = run.operations.filter(outcome=RefinementOperation.Outcome.REFUSED)
    assert refused.count() == len(calls) - 10
    assert "cap of 10" in refused.first().refusal_reason
    assert all("not applied" in r.content for _, r in engine.results[10:])
    # Revert the run: memory is exactly as before.
    from memory.refinement.services import refinement_run_revert
    from memory.services import Actor

    refinement_run_revert(run=run, actor=Actor.system("tests"))
    run.refresh_from_db()
    assert run.status == S.REVERTED
    assert {(i, t, tier, st) for i, t, tier, st, _ in state(memory)} == {
        (i, t, tier, st) for i, t, tier, st, _ in before
    }


def test_nuclear_run_on_a_small_memory_trips_the_breaker_and_rolls_everything_back(memory):
    lessons = big_memory(memory, n=30)
    before = state(memory)
    calls = [("delete", {"id": lesson.pk}) for lesson in lessons[:49]]
    calls += [("consolidate", {"ids": [lessons[i].pk, lessons[i + 1].pk], "text": "merged"}) for i in range(0, 28, 2)]
    engine = ScriptedEngine(calls)
    run = run_with(memory, engine)
    assert run.status == S.TERMINATED
    assert run.ops_used <= 10
    assert state(memory) == before
    assert not ChangeBatch.objects.filter(kind=ChangeBatch.Kind.REFINEMENT).exists()
    # 30 equal lessons: the 4th delete leaves 26/30 = 86.7% < 90%.
    assert len(engine.results) == 4
    assert TERMINATED_MESSAGE in engine.results[-1][1].content
    assert set(run.operations.values_list("outcome", flat=True)) == {RefinementOperation.Outcome.ROLLED_BACK}


def test_small_cuts_trip_the_breaker_at_the_third_operation(memory):
    # 10 lessons of 100 chars; each update cuts 40 chars: retention 96%, 92%, 88% -> trips at #3.
    lessons = [core(memory, f"{i}" + "a" * 99) for i in range(10)]
    before = state(memory)
    calls = [("update", {"id": lesson.pk, "text": f"{i}" + "b" * 59}) for i, lesson in enumerate(lessons)]
    calls.append(("complete", {}))
    engine = ScriptedEngine(calls)
    run = run_with(memory, engine)
    assert run.status == S.TERMINATED
    assert len(engine.results) == 3
    assert TERMINATED_MESSAGE in engine.results[2][1].content
    assert engine.results[2][1].is_error
    assert state(memory) == before
    assert round(run.retention, 2) == 0.88
    assert "every operation of the run was rolled back" in run.error


def test_calls_after_termination_get_the_termination_error(memory):
    from memory.refinement.session import RefinementSession

    lessons = [core(memory, "z" * 100) for _ in range(3)]
    run = refinement_run_create(memory=memory)
    session = RefinementSession.load(run)
    from memory.engines.base import ToolCall

    first = session.handle(ToolCall("1", "delete", {"id": lessons[0].pk}))
    assert TERMINATED_MESSAGE in first.content
    for name, args in [("search", {"query": "z"}), ("complete", {}), ("delete", {"id": lessons[1].pk})]:
        later = session.handle(ToolCall("2", name, args))
        assert later.is_error and later.content == TERMINATION_ERROR
    assert session.should_stop()


@pytest.mark.parametrize(
    "attack",
    [
        lambda p, o: ("delete", {"id": p.pk}),
        lambda p, o: ("update", {"id": p.pk, "text": "rewritten protected lesson"}),
        lambda p, o: ("consolidate", {"ids": [o.pk, p.pk], "text": "merged away"}),
        lambda p, o: ("consolidate", {"ids": [p.pk, o.pk], "text": "merged away"}),
    ],
)
def test_protected_lessons_survive_every_attack(memory, attack):
    protected = core(memory, "Never force-push to main; the release tooling depends on linear history", protected=True)
    other = core(memory, "Never force-push to main because release tooling needs linear history")
    filler = [core(memory, f"Unrelated lesson {i} about the billing service retry policy") for i in range(20)]
    before = state(memory)
    engine = ScriptedEngine([attack(protected, other), ("complete", {})])
    run = run_with(memory, engine)
    assert run.status == S.COMPLETED
    assert run.ops_used == 0
    assert engine.results[0][1].is_error and "protected" in engine.results[0][1].content
    op = run.operations.get(seq=1)
    assert op.outcome == RefinementOperation.Outcome.REFUSED and "protected" in op.refusal_reason
    assert state(memory) == before
    assert filler


def test_consent_no_declines_and_changes_nothing(memory):
    lessons = [core(memory, f"Lesson {i} about queues") for i in range(3)]
    before = state(memory)
    for answer in ["NO", "no thanks", "", "Maybe later", "YES, but first let me explain at length why this is fine"]:
        engine = ScriptedEngine([("delete", {"id": lessons[0].pk})], consent=answer)
        run = run_with(memory, engine)
        assert run.status == S.DECLINED, answer
        assert run.operations.count() == 0
        assert engine.prompts[0][0] == "refinement_consent"
        assert "YES or NO" in run.consent_prompt
    assert state(memory) == before


def test_zero_operations_is_a_completed_run(memory):
    core(memory, "One lesson")
    before = state(memory)
    run = run_with(memory, ScriptedEngine([("search", {"query": "lesson"}), ("complete", {"summary": "nothing"})]))
    assert run.status == S.COMPLETED
    assert run.ops_used == 0 and run.batch is None
    assert run.retention == 1.0
    assert state(memory) == before
    memory.refresh_from_db()
    assert memory.last_refined_at is not None


def test_completed_run_applies_through_services_in_one_batch(memory):
    a = core(memory, "Run the linter before pushing to the shared branch")
    b = core(memory, "Run the linter before you push to the shared branch")
    c = core(memory, "Deploys happen on Tuesdays only, after the change-advisory meeting")
    d = core(memory, "The payments service owns the ledger tables; nobody else writes to them")
    e = core(memory, "Cache keys include the tenant id to avoid cross-tenant leaks in shared caches")
    for i in range(10):
        core(memory, f"Filler lesson {i}: the search index is rebuilt nightly from the primary database")
    run = run_with(
        memory,
        ScriptedEngine(
            [
                ("consolidate", {"ids": [a.pk, b.pk], "text": "Run the linter before pushing to the shared branch"}),
                ("protect", {"id": d.pk}),
                ("update", {"id": c.pk, "text": "Deploys happen on Tuesdays only, after the change-advisory meeting."}),
                ("complete", {}),
            ]
        ),
    )
    assert run.status == S.COMPLETED, run.error
    assert run.ops_used == 3
    assert run.batch.kind == ChangeBatch.Kind.REFINEMENT
    a.refresh_from_db(), b.refresh_from_db(), d.refresh_from_db()
    assert a.status == b.status == "superseded"
    new = a.superseded_by
    assert new.tier == "core" and set(new.derived_from.all()) == {a, b}
    assert d.protected
    assert run.mass_after < run.mass_before
    consolidate = run.operations.get(action="consolidate")
    assert {item["id"] for item in consolidate.after} == {a.pk, b.pk, new.pk}
    assert run.tokens_in == 140 and run.tokens_out == 21
    assert f"id {a.pk}" in run.prompt_sent and e.text in run.prompt_sent
    # one revert undoes the whole run
    from memory.refinement.services import refinement_run_revert
    from memory.services import Actor

    refinement_run_revert(run=run, actor=Actor.system("tests"))
    a.refresh_from_db(), d.refresh_from_db()
    new.refresh_from_db()
    assert a.status == "active" and not d.protected and new.status == "deleted"
    run.refresh_from_db()
    assert run.status == S.REVERTED


def test_only_core_lessons_are_in_scope(memory):
    w = Lesson.objects.get(pk=core(memory, "core lesson").pk)
    from tests.factories import make_lesson

    working = make_lesson(memory, "working lesson", tier="working")
    run = run_with(memory, ScriptedEngine([("delete", {"id": working.pk})]))
    assert run.operations.get().outcome == RefinementOperation.Outcome.ERROR
    assert "no active core lesson" in run.operations.get().refusal_reason
    assert w.text in run.prompt_sent and "working lesson" not in run.prompt_sent


def test_bad_arguments_are_errors_and_change_nothing(memory):
    a = core(memory, "A lesson")
    before = state(memory)
    engine = ScriptedEngine(
        [
            ("delete", {}),
            ("delete", {"id": "abc"}),
            ("update", {"id": a.pk, "text": ""}),
            ("update", {"id": a.pk, "text": "two\nlines"}),
            ("consolidate", {"ids": [a.pk], "text": "x"}),
            ("consolidate", {"ids": [a.pk, a.pk], "text": "x"}),
            ("frobnicate", {}),
            ("search", {"query": ""}),
            ("complete", {}),
        ]
    )
    run = run_with(memory, engine)
    assert run.status == S.COMPLETED
    assert all(r.is_error for _, r in engine.results[:-1])
    assert run.operations.filter(outcome="error").count() == 8
    assert state(memory) == before


def test_one_running_run_per_memory(memory):
    refinement_run_create(memory=memory)
    with pytest.raises(RefinementBusy):
        refinement_run_create(memory=memory)


def test_lesson_changed_during_the_run_fails_it_with_nothing_applied(memory):
    from memory.services import Actor, lesson_update

    a = core(memory, "Lesson one about retries")
    b = core(memory, "Lesson two about timeouts")

    def meddle(call, result):
        if call.name == "update":
            lesson_update(
                lesson=Lesson.objects.get(pk=b.pk), text="edited by a person meanwhile", actor=Actor.system("person")
            )

    engine = ScriptedEngine(
        [("update", {"id": b.pk, "text": "Lesson two about timeouts!"}), ("complete", {})], after_call=meddle
    )
    run = run_with(memory, engine)
    assert run.status == S.FAILED
    assert "changed while the run was in progress" in run.error
    b.refresh_from_db()
    assert b.text == "edited by a person meanwhile"
    assert a


def test_engine_failure_mid_session_applies_nothing(memory):
    from memory.engines.base import EngineError

    lessons = [core(memory, f"Lesson {i} about the export job {i}") for i in range(30)]
    before = state(memory)

    class Broken(ScriptedEngine):
        def run_tools(self, **kw):
            kw["handler"](
                __import__("memory.engines.base", fromlist=["ToolCall"]).ToolCall("1", "delete", {"id": lessons[0].pk})
            )
            raise EngineError("provider returned 529 overloaded")

    run = run_with(memory, Broken())
    assert run.status == S.FAILED and "529" in run.error
    assert state(memory) == before
    assert list(run.operations.values_list("outcome", flat=True)) == ["rolled_back"]
