"""The promotion inbox page: who can see it, what it shows, and a fixed number of queries."""

from datetime import date

import pytest
from django.urls import reverse

from memory.models import PromotionCandidate
from memory.promotions.services import promotion_detect
from tests.factories import MemoryFactory, make_lesson
from tests.promotions.conftest import THEME

pytestmark = pytest.mark.django_db
URL = reverse("promotions:inbox")


def _candidates(n):
    """n pending candidates, each in its own memory, each with three supporting lessons."""
    for _ in range(n):
        memory = MemoryFactory()
        for i, (text, ref) in enumerate(THEME):
            make_lesson(memory, text, refs=ref, day=date(2026, 1, 1 + i))
        make_lesson(memory, "Settlement runs nightly from jobs/settle.py", tier="core", category="DECISION",
                    refs="jobs/settle.py#L3")
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


def test_approver_sees_proposal_lessons_budget_and_buttons(client_for, approver, candidate):
    html = client_for(approver).get(URL).content.decode()
    assert reverse("promotions:approve", args=[candidate.pk]) in html
    assert reverse("promotions:reject", args=[candidate.pk]) in html
    assert "Core after promotion" in html
    for lesson in candidate.supporting.all():
        assert lesson.lesson_date.isoformat() in html
    assert "src/billing/webhooks.py#L10-L30" in html
    assert 'id="promotions-badge"' in html


def test_budget_warning_when_core_would_overflow(client_for, approver, memory, candidate):
    memory.core_char_budget = 50
    memory.save()
    html = client_for(approver).get(URL).content.decode()
    assert "over its budget" in html


def test_lesson_text_is_escaped_and_hidden_characters_shown(client_for, approver, memory):
    for day in (1, 2, 3):
        make_lesson(memory, "<script>alert(1)</script> admin\u202e check in src/x.py", day=date(2026, 6, day))
    promotion_detect(memory=memory)
    html = client_for(approver).get(URL).content.decode()
    assert "<script>alert(1)</script>" not in html
    assert "&lt;script&gt;" in html
    assert "U+202E" in html


def test_query_count_does_not_grow_with_candidates(client_for, approver, django_assert_num_queries):
    client = client_for(approver)
    _candidates(1)
    client.get(URL)  # warm the permission cache of the session user
    # session, user, user perms x2 (view, approve checks), pending candidates, their supporting
    # lessons, refs, confirmations, core lessons of their memories, core refs, decided candidates,
    # pending count for the badge, memory list for the filter
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
    assert '>1</span>' in html


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
    html = client_for(approver).get(URL).content.decode()
    assert_hidden_characters_shown(html)


def test_pipeline_reflections_are_labelled_with_their_run_and_observations(client_for, viewer, memory):
    from memory.engines.offline import OfflineEngine
    from memory.models import Interaction, PipelineRun
    from memory.pipeline.services import pipeline_run_execute

    interaction = Interaction.objects.create(memory=memory, trigger_type="session", summary="s", outcome="success",
                                             transcript=[
        {"id": "a", "role": "user", "at": "2026-03-02 09:05", "text": "The orders sensor fires before the export finishes"},
        {"id": "b", "role": "assistant", "at": "2026-03-02 09:10",
         "text": "The orders sensor only checks the export file exists, so it fires before the export finishes"},
    ])
    run = pipeline_run_execute(run_id=PipelineRun.objects.create(memory=memory, interaction=interaction).pk,
                               engine=OfflineEngine())
    (candidate,) = PromotionCandidate.objects.filter(status="pending")
    assert candidate.from_pipeline and candidate.pipeline_run_id == run.pk
    assert candidate.text.startswith("The orders sensor") and candidate.distinct_dates == 1
    html = client_for(viewer).get(URL).content.decode()
    reflections = html[html.index('id="reflections-title"'):]
    assert "Pipeline reflection" in reflections and f"run #{run.pk}" in reflections
    assert "from 2 observations on 1 date" in reflections
    assert "Recurring theme" not in html and "Seen on 1 distinct date" not in html


def test_the_card_says_how_a_candidate_was_found_and_why(client_for, approver, model_candidate,
                                                          django_assert_num_queries):
    _candidates(1)  # found by the word rule, in another memory
    client = client_for(approver)
    client.get(URL)
    with django_assert_num_queries(13):  # the same queries as above: how it was found is on the row
        html = client.get(URL).content.decode()
    assert "Found by the model" in html and "Found by shared words" in html
    # The model's reason is its text, escaped like lesson text.
    assert "&lt;b&gt;All three&lt;/b&gt; trace back to retries in lockstep" in html
    assert "<b>All three</b>" not in html
