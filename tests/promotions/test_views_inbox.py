"""The promotion inbox page: who can see it, what it shows, and a fixed number of queries."""

from datetime import UTC, date, datetime

import pytest
from django.urls import reverse

from memory.models import PromotionCandidate
from memory.promotions.services import promotion_detect
from tests.factories import MemoryFactory, make_lesson
from tests.promotions.conftest import THEME, pending_candidates

pytestmark = pytest.mark.django_db
URL = reverse("promotions:inbox")


def _candidates(n):
    """n pending candidates, each in its own memory, each with three supporting lessons."""
    for _ in range(n):
        memory = MemoryFactory()
        for i, (text, ref) in enumerate(THEME):
            make_lesson(memory, text, refs=ref, day=date(2026, 1, 1 + i))
        make_lesson(
            memory,
            "Settlement runs nightly from jobs/settle.py",
            tier="core",
            category="DECISION",
            refs="jobs/settle.py#L3",
        )
        promotion_detect(memory=memory)


def test_anonymous_is_sent_to_login(client):
    response = client.get(URL)
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_user_without_role_is_forbidden(client_for, django_user_model):
    nobody = django_user_model.objects.create_user("nobody", password="x")
    assert client_for(nobody).get(URL).status_code == 403


def test_viewer_reads_without_decision_buttons(client_for, viewer, candidate):
    response = client_for(viewer).get(URL)
    assert response.status_code == 200
    html = response.content.decode()
    assert candidate.text in html
    assert "Only approvers can decide promotions." in html
    assert reverse("promotions:approve", args=[candidate.pk]) not in html


def test_approver_sees_proposal_budget_and_buttons_and_lessons_when_the_card_opens(client_for, approver, candidate):
    client = client_for(approver)
    html = client.get(URL).content.decode()
    assert reverse("promotions:approve", args=[candidate.pk]) in html
    assert reverse("promotions:reject", args=[candidate.pk]) in html
    assert "Core after promotion" in html
    assert "Supporting working lessons (3)" in html
    assert 'id="promotions-badge"' in html
    # The supporting lessons are not on the page: opening the card loads them.
    lessons_url = reverse("promotions:supporting", args=[candidate.pk])
    assert lessons_url in html
    assert "2026-01-01" not in html
    part = client.get(lessons_url, headers={"HX-Request": "true"}).content.decode()
    for lesson in candidate.supporting.all():
        assert lesson.lesson_date.isoformat() in part
    assert "src/billing/webhooks.py#L10-L30" in part
    assert "<html" not in part


def test_without_script_opening_the_lessons_leads_to_the_candidate_page(client_for, viewer, candidate):
    client = client_for(viewer)
    response = client.get(reverse("promotions:supporting", args=[candidate.pk]))
    assert response.status_code == 302 and response["Location"] == reverse("promotions:detail", args=[candidate.pk])
    page = client.get(response["Location"]).content.decode()
    assert "2026-01-01" in page and "2026-01-03" in page
    missing = client.get(reverse("promotions:supporting", args=[candidate.pk + 99]), headers={"HX-Request": "true"})
    assert missing.status_code == 404


def test_budget_warning_when_core_would_overflow(client_for, approver, memory, candidate):
    memory.core_char_budget = 50
    memory.save()
    html = client_for(approver).get(URL).content.decode()
    assert "over its budget" in html


def test_lesson_text_is_escaped_and_hidden_characters_shown(client_for, approver, memory):
    for day in (1, 2, 3):
        make_lesson(memory, "<script>alert(1)</script> admin\u202e check in src/x.py", day=date(2026, 6, day))
    (candidate,) = promotion_detect(memory=memory).created
    client = client_for(approver)
    html = client.get(URL).content.decode()
    html += client.get(
        reverse("promotions:supporting", args=[candidate.pk]), headers={"HX-Request": "true"}
    ).content.decode()
    assert "<script>alert(1)</script>" not in html
    assert "&lt;script&gt;" in html
    assert "U+202E" in html


def test_query_count_does_not_grow_with_candidates(client_for, approver, django_assert_num_queries):
    client = client_for(approver)
    _candidates(1)
    client.get(URL)  # warm the permission cache of the session user
    # session, user, user perms x2 (view, approve checks), count of pending (paginator), the page's
    # candidates, core lessons of their memories, core refs, recent decisions, pending count for the
    # nav badge, personas and projects for the filters, recent bulk decisions
    with django_assert_num_queries(13) as first:
        client.get(URL)
    _candidates(3)
    with django_assert_num_queries(len(first.captured_queries)):
        client.get(URL)


def test_memory_filter(client_for, approver, candidate):
    other = MemoryFactory()
    response = client_for(approver).get(URL, {"memory": other.pk})
    assert candidate.text not in response.content.decode()
    assert client_for(approver).get(URL, {"memory": "x"}).status_code == 404


def test_nav_badge_counts_pending(client_for, approver, candidate):
    html = client_for(approver).get(reverse("home")).content.decode()
    assert 'id="promotions-badge"' in html
    assert ">1</span>" in html


def test_home_card_template_shows_the_pending_count(rf, approver, candidate, django_assert_num_queries):
    from django.template.loader import render_to_string

    request = rf.get("/")
    request.user = approver
    approver.has_perm("memory.view_memory")  # permissions cached, as after the view's own check
    with django_assert_num_queries(1):  # one COUNT, shared by every badge on the page
        html = render_to_string("memory/promotions/_home_card.html", request=request)
        html += render_to_string("partials/nav/promotions.html", request=request)
    assert "1</span>" in html and "waiting for review" in html


def test_badge_is_hidden_from_users_without_a_role(rf, django_user_model):
    from django.template.loader import render_to_string

    request = rf.get("/")
    request.user = django_user_model.objects.create_user("nobody", password="x")
    assert render_to_string("partials/nav/promotions.html", request=request).strip() == ""


def test_hidden_characters_show_as_markers_with_a_warning(client_for, approver, memory):
    from tests.hidden import HIDDEN_TEXT, assert_hidden_characters_shown

    for day in (1, 2, 3):
        make_lesson(memory, HIDDEN_TEXT, day=date(2026, 6, day))
    promotion_detect(memory=memory)
    (candidate,) = PromotionCandidate.objects.all()
    client = client_for(approver)
    assert_hidden_characters_shown(client.get(URL).content.decode())
    lessons = client.get(reverse("promotions:supporting", args=[candidate.pk]), headers={"HX-Request": "true"})
    assert_hidden_characters_shown(lessons.content.decode())


def test_pipeline_reflections_are_labelled_with_their_run_and_observations(client_for, viewer, memory):
    from memory.engines.offline import OfflineEngine
    from memory.models import Interaction, PipelineRun
    from memory.pipeline.services import pipeline_run_execute

    interaction = Interaction.objects.create(
        memory=memory,
        trigger_type="session",
        summary="s",
        outcome="success",
        transcript=[
            {
                "id": "a",
                "role": "user",
                "at": "2026-03-02 09:05",
                "text": "The orders sensor fires before the export finishes",
            },
            {
                "id": "b",
                "role": "assistant",
                "at": "2026-03-02 09:10",
                "text": "The orders sensor only checks the export file exists, so it fires before the export finishes",
            },
        ],
    )
    run = pipeline_run_execute(
        run_id=PipelineRun.objects.create(memory=memory, interaction=interaction).pk, engine=OfflineEngine()
    )
    (candidate,) = PromotionCandidate.objects.filter(status="pending")
    assert candidate.from_pipeline and candidate.pipeline_run_id == run.pk
    assert candidate.text.startswith("The orders sensor") and candidate.distinct_dates == 1
    client = client_for(viewer)
    html = client.get(URL).content.decode()
    card = html[html.index(f'id="candidate-{candidate.pk}"') :]
    assert "Pipeline reflection" in card and f"run #{run.pk}" in card
    assert "from 2 observations on 1 date" in card
    assert client.get(URL, {"kind": "reflection"}).content.decode().count('class="card promotion') == 1
    assert client.get(URL, {"kind": "recurring"}).content.decode().count('class="card promotion') == 0
    assert "Recurring theme" not in html and "Seen on 1 distinct date" not in html


def test_the_card_says_how_a_candidate_was_found_and_why(
    client_for, approver, model_candidate, django_assert_num_queries
):
    _candidates(1)  # found by the word rule, in another memory
    client = client_for(approver)
    client.get(URL)
    with django_assert_num_queries(13):  # the same queries as above: how it was found is on the row
        html = client.get(URL).content.decode()
    assert "Found by the model" in html and "Found by shared words" in html
    # The model's reason is its text, escaped like lesson text.
    assert "&lt;b&gt;All three&lt;/b&gt; trace back to retries in lockstep" in html
    assert "<b>All three</b>" not in html


def _cards(html):
    return html.count('class="card promotion')


def _card_ids(html):
    import re

    return [int(pk) for pk in re.findall(r'<article class="card promotion[^"]*" id="candidate-(\d+)"', html)]


def test_pages_show_the_oldest_waiting_first(client_for, approver, settings, monkeypatch):
    from memory.promotions import selectors

    monkeypatch.setattr(selectors, "INBOX_PAGE_SIZE", 2)
    _candidates(5)
    # Make the newest-created candidate the one that has waited longest.
    oldest = PromotionCandidate.objects.order_by("-id").first()
    PromotionCandidate.objects.filter(pk=oldest.pk).update(created_at=datetime(2025, 1, 1, tzinfo=UTC))
    client = client_for(approver)
    first = client.get(URL).content.decode()
    assert _card_ids(first)[0] == oldest.pk and _cards(first) == 2
    assert "5 candidates" in first and "page 1 of 3" in first
    seen = (
        _card_ids(first)
        + _card_ids(client.get(URL, {"page": 2}).content.decode())
        + _card_ids(client.get(URL, {"page": 3}).content.decode())
    )
    waiting = list(
        PromotionCandidate.objects.filter(status="pending").order_by("created_at", "id").values_list("pk", flat=True)
    )
    assert seen == waiting
    assert _card_ids(client.get(URL, {"page": "999"}).content.decode()) == waiting[-1:]  # past the end: last page
    assert _card_ids(client.get(URL, {"page": "x"}).content.decode()) == waiting[:2]


def test_filters_by_persona_project_and_waiting_time(client_for, approver):
    _candidates(3)
    a, b, c = PromotionCandidate.objects.select_related("memory").order_by("id")
    PromotionCandidate.objects.filter(pk=a.pk).update(created_at=datetime(2025, 1, 1, tzinfo=UTC))
    client = client_for(approver)
    assert _card_ids(client.get(URL, {"persona": b.memory.persona_id}).content.decode()) == [b.pk]
    assert _card_ids(client.get(URL, {"project": c.memory.project_id}).content.decode()) == [c.pk]
    assert _card_ids(client.get(URL, {"age": 30}).content.decode()) == [a.pk]
    both = client.get(URL, {"persona": b.memory.persona_id, "project": c.memory.project_id}).content.decode()
    assert _card_ids(both) == [] and "No candidate matches these filters." in both


def test_a_filter_that_is_not_a_choice_is_named_and_left_out(client_for, approver, candidate):
    html = client_for(approver).get(URL, {"kind": "<b>odd</b>", "age": "5", "persona": "abc"}).content.decode()
    assert "The kind filter “&lt;b&gt;odd&lt;/b&gt;” is not one of the choices" in html
    assert "The waiting time filter “5” is not one of the choices" in html
    assert "The persona filter “abc” is not one of the choices" in html
    assert _card_ids(html) == [candidate.pk]


def test_each_card_says_how_long_it_has_waited(client_for, approver, candidate):
    from datetime import timedelta

    from django.utils import timezone

    PromotionCandidate.objects.filter(pk=candidate.pk).update(created_at=timezone.now() - timedelta(days=3, hours=2))
    html = client_for(approver).get(URL).content.decode()
    assert "Waiting 3\xa0days, 2\xa0hours" in html


def test_the_heading_reads_naturally(client_for, approver, memory, candidate):
    client = client_for(approver)
    html = client.get(URL).content.decode()
    assert "threshold of or more" not in html
    assert "on as many distinct dates as their memory asks for" in html
    html = client.get(URL, {"memory": memory.pk}).content.decode()
    assert f"on {memory.promotion_threshold} or more distinct dates" in html


def test_page_size_bounds_rows_read_and_html_size(client_for, approver, monkeypatch):
    """However many candidates wait, a page reads the rows of one page: counted at the cursor."""
    from django.db.backends.utils import CursorWrapper

    from memory.promotions import selectors

    monkeypatch.setattr(selectors, "INBOX_PAGE_SIZE", 4)
    rows = []

    def counting(name):
        def fetch(self, *args):
            found = getattr(self.cursor, name)(*args)
            rows.append(
                1 if name == "fetchone" and found is not None else len(found or ()) if name != "fetchone" else 0
            )
            return found

        return fetch

    client = client_for(approver)

    def read():
        client.get(URL)  # permissions cached
        rows.clear()
        with monkeypatch.context() as m:
            for name in ("fetchone", "fetchmany", "fetchall"):
                m.setattr(CursorWrapper, name, counting(name), raising=False)
            response = client.get(URL)
        return sum(rows), response.content

    _candidates(5)
    few_rows, _few_html = read()
    _candidates(20)
    many_rows, many_html = read()
    assert _cards(many_html.decode()) == 4
    # The same rows whatever waits, but for one row per memory in each of the filters' persona and
    # project lists (_candidates makes a persona and a project for each candidate's memory). The nav
    # badges read one total per kind of item, however many memories have items waiting.
    assert many_rows == few_rows + 2 * 20, (few_rows, many_rows)
    assert many_rows < 100
    assert len(many_html) < 1024 * 1024


def test_a_card_waiting_past_the_overdue_mark_says_so_as_other_review_lists_do(client_for, approver, memory, settings):
    """A fresh card and an overdue one look different, as in the compaction and run lists (REVIEW_OVERDUE_DAYS)."""
    import re
    from datetime import timedelta

    from django.utils import timezone

    for i, (text, ref) in enumerate(THEME):
        make_lesson(memory, text, refs=ref, day=date(2026, 1, 1 + i))
    (late,) = promotion_detect(memory=memory).created
    (fresh,) = pending_candidates(1)
    settings.REVIEW_OVERDUE_DAYS = 7
    PromotionCandidate.objects.filter(pk=late.pk).update(created_at=timezone.now() - timedelta(days=8, hours=3))
    html = client_for(approver).get(URL).content.decode()
    late_card = html[html.index(f'id="candidate-{late.pk}"') :]
    late_card = late_card[: late_card.index("</article>")]
    fresh_card = html[html.index(f'id="candidate-{fresh.pk}"') :]
    fresh_card = fresh_card[: fresh_card.index("</article>")]
    assert re.search(r'class="waited waited-overdue" title="Waiting longer than 7 days">Waiting 1\xa0week', late_card)
    assert "waited-overdue" not in fresh_card
    detail = client_for(approver).get(reverse("promotions:detail", args=[late.pk])).content.decode()
    assert "waited-overdue" in detail
