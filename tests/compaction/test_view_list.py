"""The list of proposals and memories, and the "Propose compaction" button."""

import re
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
        make_lesson(
            memory,
            f"Observation {i % (lines * 2 // 3)} about src/area_{i % 7}/mod_{i % (lines * 2 // 3)}.py",
            refs=f"src/area_{i % 7}/mod_{i}.py#L{i + 1}-L{i + 9}",
            relevance=["low", "medium", "high"][i % 3],
            category=["OBSERVATION", "HYPOTHESIS", "TODO"][i % 3],
            day=date(2026, 1, 1) + timedelta(days=i % 50),
        )
    return memory


def test_list_page_query_count_does_not_grow(client_for, approver, actor, django_assert_num_queries):
    client = client_for(approver)
    compaction_propose(memory=big_memory(5), actor=actor)
    # session, user, group perms, user perms, teams, personas and projects (filter bar), proposals count and page,
    # their line counts, memories count and page, their working and pending counts, pending promotions (nav badge)
    with django_assert_num_queries(15):
        assert client.get(reverse("compaction-list")).status_code == 200
    for _ in range(3):
        compaction_propose(memory=big_memory(5), actor=actor)
    with django_assert_num_queries(15):
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
    assert [line.kind for line in proposal.lines.all()] == ["merged"]
    again = client.post(reverse("compaction-propose", args=[memory.pk]))
    assert again["Location"] == reverse("compaction-detail", args=[proposal.pk])
    assert CompactionProposal.objects.count() == 1


def test_proposing_on_a_memory_within_its_limits_says_there_is_nothing_to_compact(
    client_for, approver, memory, django_capture_on_commit_callbacks
):
    from django.contrib.messages import get_messages

    for i in range(16):
        make_lesson(memory, f"Distinct lesson {i} about src/mod_{i}.py", refs=f"src/mod_{i}.py#L{i + 1}")
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        response = client_for(approver).post(reverse("compaction-propose", args=[memory.pk]))
    assert response.status_code == 302 and not callbacks
    (message,) = [str(m) for m in get_messages(response.wsgi_request)]
    assert message.startswith(
        f"Nothing to compact: {memory}'s working memory is within its limits (16 of 150 lessons, "
    )
    assert not CompactionProposal.objects.exists()


def test_page_size_bounds_the_rows_read_and_shown(client_for, approver, actor, monkeypatch, django_assert_num_queries):
    from memory.compaction import views

    monkeypatch.setattr(views, "PROPOSALS_PER_PAGE", 2)
    monkeypatch.setattr(views, "MEMORIES_PER_PAGE", 3)
    memories = [big_memory(5) for _ in range(5)]
    proposals = [compaction_propose(memory=m, actor=actor) for m in memories[:4]]
    client = client_for(approver)
    with django_assert_num_queries(15):
        body = client.get(reverse("compaction-list")).content.decode()
    assert len(re.findall(r'href="/compactions/\d+/"', body)) == 2  # two proposal rows of four
    assert body.count("proposal pending") + body.count("Propose compaction</button>") == 3  # three memory rows of five
    assert "Page 1 of 2 · 4 items" in body and "Page 1 of 2 · 5 items" in body
    # The oldest waiting proposal comes first; the second page of memories keeps the proposals' page.
    assert body.index(f"/compactions/{proposals[0].pk}/") < body.index(f"/compactions/{proposals[1].pk}/")
    second = client.get(reverse("compaction-list"), {"page": 2, "mpage": 2}).content.decode()
    assert f"/compactions/{proposals[3].pk}/" in second and f"/compactions/{proposals[0].pk}/" not in second
    assert second.count("proposal pending") + second.count("Propose compaction</button>") == 2


def test_filters_narrow_both_lists(client_for, approver, actor):
    first, second = big_memory(5), big_memory(5)
    compaction_propose(memory=first, actor=actor)
    done = compaction_propose(memory=second, actor=actor)
    CompactionProposal.objects.filter(pk=done.pk).update(status="rejected")
    client = client_for(approver)
    body = client.get(reverse("compaction-list"), {"persona": first.persona_id}).content.decode()
    assert f"{first.persona.name} × {first.project.name}" in body
    assert f"{second.persona.name} × {second.project.name}" not in body
    pending = client.get(reverse("compaction-list"), {"status": "pending"}).content.decode()
    assert f"/compactions/{done.pk}/" not in pending
    old = client.get(reverse("compaction-list"), {"age": "older"}).content.decode()
    assert "No proposals match these filters" in old
    assert client.get(reverse("compaction-list"), {"persona": "x", "status": "bogus", "age": "?"}).status_code == 200
