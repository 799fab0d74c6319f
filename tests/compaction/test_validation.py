"""Each rule rejects a crafted bad model answer; the proposal is stored as invalid and memory is untouched."""

import pytest

from memory.compaction.services import CompactionError, compaction_apply, compaction_propose
from memory.models import CompactionProposal
from tests.compaction.helpers import ScriptedEngine, memory_state

pytestmark = pytest.mark.django_db


def _line(lines, start):
    return next(line for line in lines if line.startswith(start))


def wrong_format(text, ids):
    return "Here is the compacted memory:\n" + text


def missing_ids(text, ids):
    return text.replace(f" {{ids: {ids['f']}}}", "")


def bad_category(text, ids):
    return text.replace("- [HYPOTHESIS]", "- [IDEA]")


def too_many_lines(text, ids):
    merged = _line(text.splitlines(), "- [OBSERVATION] Queue")
    split = (
        f"- [OBSERVATION] Retry uses a fixed 1s delay (ref: src/queue/worker.ts#L88-L95) {{ids: {ids['a']}}}\n"
        f"- [OBSERVATION] Queue worker retry has no backoff (ref: src/queue/worker.ts#L88-L95) {{ids: {ids['b']}}}"
    )
    return text.replace(merged, split)


def invented_id(text, ids):
    return text.replace(f"{{ids: {ids['f']}}}", f"{{ids: {ids['f']}, 999999}}")


def invented_drop(text, ids):
    return text + "DROP {ids: 424242}: not needed\n"


def dropped_protected(text, ids):
    line = _line(text.splitlines(), "- [DECISION]")
    return text.replace(line + "\n", "") + f"DROP {{ids: {ids['d']}}}: old news\n"


def rewrote_protected(text, ids):
    return text.replace("Audit log is event-sourced for replay", "Audit log uses event sourcing")


def merged_critical(text, ids):
    line = _line(text.splitlines(), "- [HYPOTHESIS]")
    return text.replace(line + "\n", "").replace(f"{{ids: {ids['f']}}}", f"{{ids: {ids['f']}, {ids['e']}}}")


def lost_ref_in_merge(text, ids):
    return text.replace(" (ref: src/queue/worker.ts#L88-L95)", "")


def lost_ref_uncited(text, ids):
    line = _line(text.splitlines(), "- [OBSERVATION] Reports")
    return text.replace(line + "\n", "")


def bad_ref(text, ids):
    return text.replace("src/reports/views.py#L12-L30", "src/reports/views.py#L30-L12")


CASES = [
    (wrong_format, 'Output line 1 is not in the form "- [CATEGORY] text'),
    (missing_ids, "is not in the form"),
    (bad_category, "[IDEA] is not a working memory category"),
    (too_many_lines, "The proposal has 5 lines; at most 4 are allowed."),
    (invented_id, "cites lesson #999999, which is not in the working memory being compacted."),
    (invented_drop, "The proposal drops lesson #424242, which is not in the working memory being compacted."),
    (dropped_protected, "is protected: it must be kept unchanged, but the proposal leaves it out."),
    (rewrote_protected, "is protected: it must be kept unchanged on a line of its own, but the proposal changes"),
    (merged_critical, "is critical: it must be kept unchanged on a line of its own"),
    (lost_ref_in_merge, "Ref src/queue/worker.ts#L88-L95 of lesson #{a} is in no proposed line"),
    (
        lost_ref_uncited,
        "Ref src/reports/views.py#L12-L30 of lesson #{f} is in no proposed line, and lesson #{f} "
        "is not listed as dropped.",
    ),
    (bad_ref, "bad reference"),
]


def test_the_good_answer_is_valid(memory, lessons, good_output, actor):
    proposal = compaction_propose(memory=memory, actor=actor, engine=ScriptedEngine(good_output))
    assert proposal.validation_errors == []
    assert proposal.status == CompactionProposal.Status.PENDING
    assert proposal.engine == "scripted" and proposal.model_name == "scripted-1"


@pytest.mark.parametrize("mangle,message", CASES, ids=[c[0].__name__ for c in CASES])
def test_bad_answer_is_invalid_and_memory_untouched(memory, lessons, good_output, actor, mangle, message):
    ids = {k: v.pk for k, v in lessons.items()}
    before = memory_state(memory)
    proposal = compaction_propose(memory=memory, actor=actor, engine=ScriptedEngine(mangle(good_output, ids)))

    assert proposal.status == CompactionProposal.Status.INVALID
    expected = message.format(**ids)
    assert any(expected in error for error in proposal.validation_errors), proposal.validation_errors
    assert not proposal.is_applicable
    with pytest.raises(CompactionError):
        compaction_apply(proposal=proposal, actor=actor)
    assert memory_state(memory) == before


def test_each_case_breaks_exactly_the_rule_it_names(memory, lessons, good_output, actor):
    """Guard against a case that fails for an unrelated reason: each mangled answer yields few errors."""
    ids = {k: v.pk for k, v in lessons.items()}
    for mangle, _message in CASES:
        proposal = compaction_propose(memory=memory, actor=actor, engine=ScriptedEngine(mangle(good_output, ids)))
        assert 1 <= len(proposal.validation_errors) <= 2, (mangle.__name__, proposal.validation_errors)


def test_invalid_proposal_does_not_block_a_new_one(memory, lessons, good_output, actor):
    compaction_propose(memory=memory, actor=actor, engine=ScriptedEngine("nonsense"))
    proposal = compaction_propose(memory=memory, actor=actor, engine=ScriptedEngine(good_output))
    assert proposal.status == CompactionProposal.Status.PENDING


def test_empty_answer_is_invalid(memory, lessons, actor):
    proposal = compaction_propose(memory=memory, actor=actor, engine=ScriptedEngine(""))
    assert proposal.validation_errors == ["The proposal has no lines; compaction never empties working memory."]


def test_engine_failure_is_recorded_on_an_invalid_proposal(memory, lessons, actor):
    before = memory_state(memory)
    proposal = compaction_propose(memory=memory, actor=actor, engine=ScriptedEngine(error="rate limited (429)"))
    assert proposal.status == CompactionProposal.Status.INVALID
    assert proposal.validation_errors == ["The scripted engine failed: rate limited (429)"]
    assert memory_state(memory) == before


def test_prompt_lists_every_lesson_with_its_id_and_marks(memory, lessons, good_output, actor):
    engine = ScriptedEngine(good_output)
    compaction_propose(memory=memory, actor=actor, engine=engine)
    (call,) = engine.calls
    assert call["purpose"] == "compaction"
    assert "at most 4 lines" in call["system"]
    for key in "abcdef":
        assert f"#{lessons[key].pk} " in call["prompt"]
    assert f"#{lessons['core'].pk} " not in call["prompt"]  # core is never compacted
    assert "(protected)" in call["prompt"] and "(critical)" in call["prompt"]
    assert "(ref: src/events/store.ts#L5-L15)" in call["prompt"]
