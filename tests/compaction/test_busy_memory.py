"""A proposal waits for review while agents keep writing: what makes it stale, what it keeps, what revert does."""

from datetime import date

import pytest
from django.core.exceptions import ValidationError

from memory import services
from memory.api.services import agent_lessons_append
from memory.compaction.selectors import over_limits_explanation
from memory.compaction.services import (
    StaleProposal,
    compaction_apply,
    compaction_propose,
    compaction_revert,
)
from memory.formats.exporter import render_memory_files
from memory.models import AgentToken, ChangeBatch, CompactionProposal, Lesson, LessonConfirmation
from tests.compaction.helpers import ScriptedEngine, memory_state
from tests.factories import make_lesson

pytestmark = pytest.mark.django_db


@pytest.fixture
def proposal(memory, lessons, good_output, actor):
    return compaction_propose(memory=memory, actor=actor, engine=ScriptedEngine(good_output))


@pytest.fixture
def token(memory):
    return AgentToken.objects.create(persona=memory.persona, prefix="nwm_test0001", token_hash="x" * 64)


def _append(memory, token, *texts, day=None):
    items = [{"tool": "log_learning", "text": t, "refs": [f"src/new_{i}.py#L{i + 1}"]} for i, t in enumerate(texts)]
    _, results = agent_lessons_append(memory=memory, token=token, items=items)
    lessons = [lesson for lesson, _ in results]
    if day:  # what an agent appending on a later day produces
        Lesson.objects.filter(pk__in=[lesson.pk for lesson in lessons]).update(lesson_date=day)
    return [Lesson.objects.get(pk=lesson.pk) for lesson in lessons]


def _row(lesson):
    lesson = Lesson.objects.get(pk=lesson.pk)
    return (
        lesson.pk,
        lesson.tier,
        lesson.category,
        lesson.text,
        lesson.status,
        lesson.relevance,
        lesson.protected,
        lesson.lesson_date,
        lesson.section,
        tuple(r.as_text() for r in lesson.refs.all()),
    )


def test_appends_and_core_writes_do_not_make_a_proposal_stale(memory, lessons, proposal, actor, token):
    appended = _append(
        memory, token, "Uploads retry three times on 503", "Cache keys include the locale", day=date(2026, 2, 1)
    )
    services.lesson_create(
        memory=memory, tier="core", category="DECISION", text="Core: all writes go through services", actor=actor
    )
    services.lesson_update(lesson=lessons["core"], text="Services own all writes, and history", actor=actor)
    (again,) = _append(memory, token, appended[0].text)  # a confirmation of a lesson outside the proposal
    assert again.pk == appended[0].pk and again.confirmations.count() == 1
    before = [_row(lesson) for lesson in appended]

    batch = compaction_apply(proposal=proposal, actor=actor)

    proposal.refresh_from_db()
    assert proposal.status == CompactionProposal.Status.APPLIED
    assert [_row(lesson) for lesson in appended] == before  # active, same row, same text, refs, date and section
    assert not batch.changes.filter(lesson__in=appended).exists()
    # one batch for the whole compaction, and nothing else was written by it
    assert ChangeBatch.objects.filter(memory=memory, kind=ChangeBatch.Kind.COMPACTION).count() == 1


def test_appended_lessons_follow_the_compacted_lines_so_working_md_stays_in_date_order(
    memory, lessons, proposal, actor, token
):
    appended = _append(memory, token, "Uploads retry three times on 503", day=date(2026, 2, 1))
    compaction_apply(proposal=proposal, actor=actor)

    working = render_memory_files(memory)["working.md"][0]
    headers = [line for line in working.splitlines() if line.startswith("## ")]
    dates = [h.split()[1] for h in headers]
    assert dates == sorted(dates), working
    assert working.rstrip().endswith(f"- [OBSERVATION] {appended[0].text} (ref: src/new_0.py#L1)")
    assert "Queue worker retries after a fixed 1s" in working.split(appended[0].text)[0]


@pytest.mark.parametrize(
    "change, how",
    [
        (
            lambda lessons, a: services.lesson_update(
                lesson=lessons["f"], text="Reports endpoint runs two queries per row", actor=a
            ),
            "was edited: “Reports endpoint runs one query per row” → “Reports endpoint runs two queries per row”",
        ),
        (
            lambda lessons, a: services.lesson_update(
                lesson=lessons["f"], refs="src/reports/views.py#L12-L40", actor=a
            ),
            "was edited (refs",
        ),
        (lambda lessons, a: services.lesson_delete(lesson=lessons["c"], actor=a), "was deleted"),
        (
            lambda lessons, a: services.lesson_set_protected(lesson=lessons["c"], protected=True, actor=a),
            "was protected",
        ),
        (lambda lessons, a: services.lesson_promote(lesson=lessons["a"], actor=a), "was promoted to core"),
    ],
)
def test_a_change_to_a_covered_lesson_makes_it_stale_and_says_how_and_by_whom(
    memory, lessons, proposal, curator, actor, change, how
):
    change(lessons, services.Actor.for_user(curator))
    before = memory_state(memory)
    with pytest.raises(StaleProposal) as exc:
        compaction_apply(proposal=proposal, actor=actor)
    assert how in str(exc.value) and "by curator" in str(exc.value)
    assert memory_state(memory) == before
    proposal.refresh_from_db()
    assert proposal.status == "stale" and how in proposal.reason


def test_a_confirmation_of_a_compacted_lesson_is_carried_over_to_the_lesson_replacing_it(
    memory, lessons, proposal, actor, token
):
    # The agent says lesson a again: counted as a confirmation of a, which the proposal merges with b.
    (same,) = _append(memory, token, lessons["a"].text)
    assert same.pk == lessons["a"].pk
    confirmed_on = [c.confirmed_on for c in LessonConfirmation.objects.filter(lesson=lessons["a"])]

    compaction_apply(proposal=proposal, actor=actor)

    merged = Lesson.objects.get(memory=memory, status="active", text__startswith="Queue worker retries")
    assert [c.confirmed_on for c in merged.confirmations.all()] == confirmed_on == [date.today()]
    assert LessonConfirmation.objects.filter(lesson=lessons["a"]).count() == 1  # the original stays with a


def test_a_lesson_the_proposal_drops_seen_again_makes_it_stale(memory, lessons, proposal, actor, token):
    _append(memory, token, lessons["c"].text)  # c is dropped as too vague; an agent just said it again
    with pytest.raises(StaleProposal, match=f"Lesson #{lessons['c'].pk} was seen again although the proposal drops it"):
        compaction_apply(proposal=proposal, actor=actor)
    assert Lesson.objects.get(pk=lessons["c"].pk).status == "active"


def test_revert_restores_the_covered_lessons_and_leaves_appended_ones_alone(memory, lessons, proposal, actor, token):
    covered_before = {_row(lessons[k]) for k in "abcdef"}
    early = _append(memory, token, "Appended before the apply about src/early.py")
    batch = compaction_apply(proposal=proposal, actor=actor)
    late = _append(memory, token, "Appended after the apply about src/late.py")
    appended_before = [_row(lesson) for lesson in early + late]

    compaction_revert(proposal=proposal, actor=actor)

    assert {_row(lessons[k]) for k in "abcdef"} == covered_before
    assert [_row(lesson) for lesson in early + late] == appended_before
    created = Lesson.objects.filter(pk__in=batch.changes.filter(action="create").values("lesson_id"))
    assert set(created.values_list("status", flat=True)) == {"deleted"}


def test_after_apply_the_budget_message_gives_the_figures(memory, lessons, proposal, actor, token):
    assert over_limits_explanation(memory) == ""
    memory.working_char_budget = 400
    memory.save()
    _append(
        memory,
        token,
        *[f"Appended lesson {i} about the upload retry path in src/upload/retry_{i}.py" for i in range(4)],
    )
    compaction_apply(proposal=proposal, actor=actor)
    proposal.refresh_from_db()

    chars = len(render_memory_files(memory)["working.md"][0])
    assert chars > 400
    explanation = over_limits_explanation(memory)
    assert explanation.startswith(f"working.md is {chars} characters, over the budget of 400. Why: ")
    assert "4 lessons were written after the proposal was made and kept as they are" in explanation


def test_a_proposal_made_before_fingerprints_falls_back_to_the_memory_version(memory, lessons, proposal, actor):
    CompactionProposal.objects.filter(pk=proposal.pk).update(input_fingerprints={})
    make_lesson(memory, "Appended about src/any.py")
    with pytest.raises(StaleProposal, match="predates per-lesson checks"):
        compaction_apply(proposal=proposal, actor=actor)


def test_an_append_that_breaks_a_rule_changes_nothing_and_keeps_the_proposal_applicable(
    memory, lessons, proposal, actor, token
):
    with pytest.raises(ValidationError):
        agent_lessons_append(memory=memory, token=token, items=[{"tool": "log_learning", "text": " "}])
    compaction_apply(proposal=proposal, actor=actor)
    assert CompactionProposal.objects.get(pk=proposal.pk).status == "applied"
