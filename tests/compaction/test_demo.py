import io

import pytest

from memory.compaction import demo
from memory.compaction.selectors import working_lessons
from memory.models import CompactionProposal

pytestmark = pytest.mark.django_db


def test_demo_seeds_a_pending_proposal_for_a_memory_over_its_limit_and_is_idempotent():
    out = io.StringIO()
    proposal = demo.seed(out)
    assert proposal.status == "pending", proposal.validation_errors
    memory = proposal.memory
    assert len(working_lessons(memory)) > memory.max_working_lines
    assert proposal.lines.count() <= memory.compaction_target_lines
    kinds = set(proposal.lines.values_list("kind", flat=True))
    assert {"kept", "merged"} <= kinds
    assert proposal.drops.filter(had_refs=True).exists() and proposal.drops.filter(had_refs=False).exists()

    again = demo.seed(out)
    assert again == proposal
    assert CompactionProposal.objects.count() == 1
    assert len(working_lessons(memory)) == len(proposal.input_lesson_ids)
    assert "already waiting for review" in out.getvalue()
