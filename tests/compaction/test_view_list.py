"""The list of proposals and memories, and the "Propose compaction" button."""

from datetime import date, timedelta

import pytest
from django.urls import reverse

from memory.compaction.services import compaction_propose
from memory.models import CompactionProposal
from tests.compaction.helpers import ScriptedEngine
from tests.factories import MemoryFactory, make_lesson

pytestmark = pytest.mark.django_db


@pytest.fixture
def proposal(memory, lessons, good_output, actor):
    return compaction_propose(memory=memory, actor=actor, engine=ScriptedEngine(good_output))


def big_memory(lines, **kwargs):
    memory = MemoryFactory(**kwargs)
    for i in range(lines):
        make_lesson(memory, f"Observation {i % (lines * 2 // 3)} about src/area_{i % 7}/mod_{i % (lines * 2 // 3)}.py",
                    refs=f"src/area_{i % 7}/mod_{i}.py#L{i + 1}-L{i + 9}", relevance=["low", "medium", "high"][i % 3],
                    category=["OBSERVATION", "HYPOTHESIS", "TODO"][i % 3], day=date(2026, 1, 1) + timedelta(days=i % 50))
    return memory


def test_list_page_query_count_does_not_grow(client_for, approver, actor, django_assert_num_queries):
    client = client_for(approver)
    compaction_propose(memory=big_memory(5), actor=actor)
    with django_assert_num_queries(7):
        assert client.get(reverse("compaction-list")).status_code == 200
    for _ in range(3):
        compaction_propose(memory=big_memory(5), actor=actor)
    # session, user, group perms, user perms, proposals, memories, pending promotions (nav badge)
    with django_assert_num_queries(7):
        response = client.get(reverse("compaction-list"))
    assert response.content.count(b"Propose compaction") == 0  # every memory has one pending


def test_propose_button(client_for, approver, memory, django_capture_on_commit_callbacks):
    memory.max_working_lines = 1  # over its limit: there is something to compact
    memory.save()
    make_lesson(memory, "A lesson about src/a.py", refs="src/a.py#L1")
    make_lesson(memory, "A lesson about src/a.py", refs="src/a.py#L2")
    client = client_for(approver)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("compaction-propose", args=[memory.pk]))
    assert response.status_code == 302
    proposal = CompactionProposal.objects.get(memory=memory)
    assert proposal.status == "pending" and proposal.created_by == approver and proposal.trigger == "manual"
    assert [l.kind for l in proposal.lines.all()] == ["merged"]
    again = client.post(reverse("compaction-propose", args=[memory.pk]))
    assert again["Location"] == reverse("compaction-detail", args=[proposal.pk])
    assert CompactionProposal.objects.count() == 1


def test_proposing_on_a_memory_within_its_limits_says_there_is_nothing_to_compact(
        client_for, approver, memory, django_capture_on_commit_callbacks):
    from django.contrib.messages import get_messages

    for i in range(16):
        make_lesson(memory, f"Distinct lesson {i} about src/mod_{i}.py", refs=f"src/mod_{i}.py#L{i + 1}")
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        response = client_for(approver).post(reverse("compaction-propose", args=[memory.pk]))
    assert response.status_code == 302 and not callbacks
    (message,) = [str(m) for m in get_messages(response.wsgi_request)]
    assert message.startswith(f"Nothing to compact: {memory}'s working memory is within its limits (16 of 150 lessons, ")
    assert not CompactionProposal.objects.exists()

