"""One review queue behind the home page, the nav badges and each memory page: every kind counted apart."""

import re
from datetime import date, timedelta

import pytest
from django.utils import timezone

from memory.access import EVERY_MEMORY
from memory.compaction.services import compaction_propose
from memory.models import CompactionProposal, PipelineRun, PromotionCandidate, RefinementRun
from memory.promotions.services import promotion_detect
from memory.review_queue import counts_by_source, memory_queue, pending_review_counts
from tests.factories import SYSTEM, MemoryFactory, make_lesson

pytestmark = pytest.mark.django_db


def _promotion_and_compaction(memory):
    for day in (1, 2, 3):
        make_lesson(
            memory,
            "Refresh tokens skip the expiry check in the auth middleware",
            refs="src/auth/middleware.ts#L23-L30",
            day=date(2026, 1, day),
        )
    promotion_detect(memory=memory)
    compaction_propose(memory=memory, actor=SYSTEM)
    assert PromotionCandidate.objects.filter(memory=memory, status="pending").count() == 1
    assert CompactionProposal.objects.filter(memory=memory, status="pending").count() == 1


def _run(memory, status, minutes_ago):
    started = timezone.now() - timedelta(minutes=minutes_ago)
    return RefinementRun.objects.create(memory=memory, status=status, started_at=started, finished_at=started)


def test_pending_items_of_every_feature_are_counted_per_memory(memory):
    _promotion_and_compaction(memory)
    other = MemoryFactory()
    assert pending_review_counts(EVERY_MEMORY) == {memory.pk: 2}
    assert pending_review_counts([other.pk]) == {}
    counts = counts_by_source(EVERY_MEMORY)
    assert counts["promotions"] == {memory.pk: 1} and counts["compactions"] == {memory.pk: 1}


def test_a_run_that_went_wrong_waits_until_a_later_run_completes(memory):
    rolled_back = _run(memory, RefinementRun.Status.TERMINATED, 30)
    PipelineRun.objects.create(memory=memory, status=PipelineRun.Status.FAILED)
    _run(memory, RefinementRun.Status.COMPLETED, 60)  # earlier than the rolled-back run: does not settle it
    _run(MemoryFactory(), RefinementRun.Status.DECLINED, 5)  # the model said no: nothing to look at
    counts = counts_by_source(EVERY_MEMORY)
    assert counts["refinement-runs"] == {memory.pk: 1}
    assert counts["pipeline-runs"] == {memory.pk: 1}
    queue = memory_queue(memory)
    runs = next(e for e in queue.entries if e.source.key == "refinement-runs")
    assert [item.url for item in runs.items] == [f"/refinement/runs/{rolled_back.pk}/"]
    _run(memory, RefinementRun.Status.COMPLETED, 1)
    PipelineRun.objects.create(memory=memory, status=PipelineRun.Status.COMPLETED)
    assert (
        counts_by_source(EVERY_MEMORY)["refinement-runs"] == {}
        and counts_by_source(EVERY_MEMORY)["pipeline-runs"] == {}
    )


def test_home_lists_each_kind_with_its_link_and_the_badge_agrees(client_for, viewer, memory):
    _promotion_and_compaction(memory)
    _run(memory, RefinementRun.Status.TERMINATED, 10)
    html = client_for(viewer).get("/").content.decode()
    panel = html[html.index('id="review-heading"') : html.index("</section>", html.index('id="review-heading"'))]
    assert re.search(r'href="/promotions/"><strong>1</strong> promotion</a>', panel)
    assert re.search(r'href="/compactions/"><strong>1</strong> compaction</a>', panel)
    assert re.search(r'href="/refinement/"><strong>1</strong> refinement run to look at</a>', panel)
    # The memory's cell says the same, kind by kind.
    assert 'data-review="promotions">1 promotion<' in html and 'data-review="compactions">1 compaction<' in html
    # The total waiting is a link of its own to the queue that says what it counts ("3 to review"), not a
    # number beside Memories that reads as a count of memories; the Promotions badge counts promotions only.
    nav = html[html.index('aria-label="Main"') : html.index("</nav>", html.index('aria-label="Main"'))]
    assert re.search(r'aria-current="page">Memories</a>', nav)
    assert re.search(
        r'<a class="nav-review" href="/#review-heading" title="Waiting for review: 1 promotion, 1 compaction, '
        r'1 refinement run to look at"><span class="badge badge-accent">3</span> to review</a>',
        nav,
    )
    assert re.search(r'id="promotions-badge"[^>]*>1</span>', nav)
    # The phone's closed menu says it too.
    toggle = html[html.index('class="menu-toggle"') : html.index("</summary>")]
    assert re.search(r'<span class="badge badge-accent">3</span> to review', toggle)


def test_with_nothing_waiting_the_nav_shows_no_review_count(client_for, viewer, memory):
    html = client_for(viewer).get("/").content.decode()
    assert "nav-review" not in html and "to review" not in html[: html.index("</header>")]


def test_memory_page_links_every_item(client_for, viewer, memory):
    _promotion_and_compaction(memory)
    run = _run(memory, RefinementRun.Status.FAILED, 10)
    candidate = PromotionCandidate.objects.get(memory=memory)
    proposal = CompactionProposal.objects.get(memory=memory)
    html = client_for(viewer).get(memory.get_absolute_url()).content.decode()
    assert 'id="memory-queue-heading">Needs attention <span class="count">3</span>' in html
    assert f'href="/promotions/{candidate.pk}/"' in html
    assert f'href="/compactions/{proposal.pk}/"' in html
    assert f'href="/refinement/runs/{run.pk}/"' in html


def test_memory_page_without_anything_pending_has_no_panel(client_for, viewer, memory):
    assert "memory-queue-heading" not in client_for(viewer).get(memory.get_absolute_url()).content.decode()


def test_an_approver_marks_a_run_as_looked_at_and_it_leaves_the_queue(client_for, approver, viewer, memory):
    from django.urls import reverse

    rolled_back = _run(memory, RefinementRun.Status.TERMINATED, 10)
    failed = PipelineRun.objects.create(memory=memory, status=PipelineRun.Status.FAILED, error="engine down")
    page = client_for(approver).get(reverse("refinement:run", args=[rolled_back.pk])).content.decode()
    assert "Mark as looked at" in page
    assert client_for(viewer).post(reverse("refinement:run-looked-at", args=[rolled_back.pk])).status_code == 403
    client = client_for(approver)
    response = client.post(reverse("refinement:run-looked-at", args=[rolled_back.pk]))
    assert response.status_code == 302
    response = client.post(reverse("pipeline:run-looked-at", args=[failed.pk]), HTTP_HX_REQUEST="true")
    assert response["HX-Redirect"] == reverse("pipeline:run", args=[failed.pk])
    counts = counts_by_source(EVERY_MEMORY)
    assert counts["refinement-runs"] == {} and counts["pipeline-runs"] == {}
    rolled_back.refresh_from_db()
    assert rolled_back.looked_by == approver
    assert "Looked at by approver" in client.get(reverse("refinement:run", args=[rolled_back.pk])).content.decode()
    # Twice is refused with a message, and a completed run never needed a look.
    client.post(reverse("refinement:run-looked-at", args=[rolled_back.pk]))
    done = _run(memory, RefinementRun.Status.COMPLETED, 1)
    html = client.post(reverse("refinement:run-looked-at", args=[done.pk]), follow=True).content.decode()
    assert "not waiting for anyone to look at it" in html
    done.refresh_from_db()
    assert done.looked_at is None
