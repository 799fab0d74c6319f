"""The review page of one proposal: roles, content, escaping, constant queries."""

from datetime import date, timedelta

import pytest
from django.urls import reverse

from memory import services
from memory.compaction.services import StaleProposal, compaction_apply, compaction_propose
from memory.models import CompactionProposal
from tests.compaction.helpers import ScriptedEngine, memory_state
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


def test_anonymous_goes_to_login(client, proposal):
    response = client.get(reverse("compaction-detail", args=[proposal.pk]))
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_viewer_reads_but_cannot_act(client_for, viewer, proposal, memory):
    client = client_for(viewer)
    response = client.get(reverse("compaction-detail", args=[proposal.pk]))
    assert response.status_code == 200
    assert b"Approve and apply" not in response.content and b"takes the approver role" in response.content
    before = memory_state(memory)
    for name in ("compaction-apply", "compaction-reject", "compaction-revert"):
        assert client.post(reverse(name, args=[proposal.pk]), {"reason": "x"}).status_code == 403
    line = proposal.lines.first()
    assert client.get(reverse("compaction-line-edit", args=[proposal.pk, line.pk])).status_code == 403
    assert client.post(reverse("compaction-propose", args=[memory.pk])).status_code == 403
    assert memory_state(memory) == before
    assert CompactionProposal.objects.get(pk=proposal.pk).status == "pending"


def test_review_page_shows_summary_lessons_drops_and_diff(client_for, approver, proposal, lessons):
    response = client_for(approver).get(reverse("compaction-detail", args=[proposal.pk]))
    html = response.content.decode()
    assert "Approve and apply" in html
    assert 'class="badge badge-merged"' in html and 'class="badge badge-rewritten"' in html
    assert "too vague to act on" in html
    assert '<span class="diff-del">-- [OBSERVATION] Retry uses a fixed 1s delay' in html
    assert '<span class="diff-add">+- [OBSERVATION] Queue worker retries after a fixed 1s with no backoff' in html
    assert "working.md (proposed)" in html


def test_lesson_text_is_escaped(client_for, approver, memory, actor):
    make_lesson(memory, '<script>alert("x")</script> in src/evil.py', refs="src/evil.py#L1")
    proposal = compaction_propose(memory=memory, actor=actor)
    html = client_for(approver).get(reverse("compaction-detail", args=[proposal.pk])).content.decode()
    assert "<script>alert" not in html and "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in html


def test_invalid_proposal_shows_its_errors_and_no_apply_button(client_for, approver, memory, lessons, actor):
    proposal = compaction_propose(memory=memory, actor=actor, engine=ScriptedEngine("Sure! Here you go."))
    html = client_for(approver).get(reverse("compaction-detail", args=[proposal.pk])).content.decode()
    assert "Invalid: this proposal can never be applied" in html
    assert "Output line 1 is not in the form" in html
    assert "Approve and apply" not in html
    assert "Sure! Here you go." in html  # the verbatim answer


def _review_queries(client, django_assert_num_queries, proposal_pk, count):
    with django_assert_num_queries(count):
        response = client.get(reverse("compaction-detail", args=[proposal_pk]))
    assert response.status_code == 200
    return response


def test_review_page_query_count_does_not_grow_with_memory(client_for, approver, actor, django_assert_num_queries):
    client = client_for(approver)
    small = compaction_propose(memory=big_memory(12), actor=actor)
    large = compaction_propose(memory=big_memory(150), actor=actor)
    assert large.status == small.status == "pending"
    assert len(large.input_lesson_ids) == 150 and large.lines.count() == 60
    # session, user, user's groups' permissions, user's own permissions, proposal (+memory, persona,
    # project, users, batch), its lines, its drops, the input lessons, their refs, lessons appended since,
    # confirmations of its dropped lessons since, pending promotions (nav badge)
    _review_queries(client, django_assert_num_queries, small.pk, 12)
    response = _review_queries(client, django_assert_num_queries, large.pk, 12)
    assert response.content.count(b'class="badge badge-') >= 60


def test_appended_lessons_are_listed_and_do_not_make_the_proposal_stale(client_for, approver, proposal, memory):
    client = client_for(approver)
    late = [
        make_lesson(memory, f"Written after the proposal about src/late_{i}.py", refs=f"src/late_{i}.py#L{i + 1}")
        for i in range(2)
    ]
    services.lesson_create(
        memory=memory,
        tier="core",
        category="PATTERN",
        text="A new core rule about src/core.py",
        actor=services.Actor.system(),
    )
    html = client.get(reverse("compaction-detail", args=[proposal.pk])).content.decode()
    assert "2 lessons appended since this proposal; they are kept as they are" in html
    for lesson in late:
        assert f"#{lesson.pk} · " in html and lesson.text in html
    assert "stale-warning" not in html and "recompute-button" not in html


def test_an_edited_covered_lesson_is_shown_with_how_and_by_whom(
    client_for, approver, curator, proposal, memory, lessons, actor
):
    client = client_for(approver)
    services.lesson_update(
        lesson=lessons["f"], text="Reports endpoint runs two queries per row", actor=services.Actor.for_user(curator)
    )
    html = client.get(reverse("compaction-detail", args=[proposal.pk])).content.decode()
    assert "Stale: a lesson this proposal covers changed since it was computed" in html
    assert (
        f"Lesson #{lessons['f'].pk} was edited: “Reports endpoint runs one query per row” → "
        "“Reports endpoint runs two queries per row” by curator"
    ) in html
    assert 'id="recompute-button"' in html and 'id="apply-button"' not in html
    with pytest.raises(StaleProposal):
        compaction_apply(proposal=proposal, actor=actor)
    html = client.get(reverse("compaction-detail", args=[proposal.pk])).content.decode()
    assert "Stale since" in html and "was edited" in html and 'id="recompute-button"' in html


def test_hidden_characters_show_as_markers_with_a_warning(client_for, approver, memory, actor):
    from tests.hidden import HIDDEN_TEXT, assert_hidden_characters_shown

    a = make_lesson(memory, HIDDEN_TEXT)
    b = make_lesson(memory, HIDDEN_TEXT + " (again)")
    c = make_lesson(memory, "Drop me\u200b: src/old.py is gone")
    answer = f"- [OBSERVATION] {HIDDEN_TEXT} {{ids: {a.pk}, {b.pk}}}\nDROP {{ids: {c.pk}}}: gone\u202e\n"
    proposal = compaction_propose(memory=memory, actor=actor, engine=ScriptedEngine(answer))
    assert proposal.status == CompactionProposal.Status.PENDING, proposal.validation_errors
    html = client_for(approver).get(reverse("compaction-detail", args=[proposal.pk])).content.decode()
    assert_hidden_characters_shown(html)
    assert '<span class="diff-ctx"> - [OBSERVATION] Trust the admin<span class="invisible-char"' in html
