"""Approve and reject views: permissions, full-page and htmx responses, errors that change nothing."""

import pytest
from django.urls import reverse

from memory import services
from memory.models import Lesson, PromotionCandidate
from tests.factories import SYSTEM

pytestmark = pytest.mark.django_db


def approve_url(c):
    return reverse("promotions:approve", args=[c.pk])


def reject_url(c):
    return reverse("promotions:reject", args=[c.pk])


def _unchanged(candidate):
    candidate.refresh_from_db()
    return candidate.status == "pending" and not Lesson.objects.filter(tier="core").exists()


def test_post_without_login_redirects_and_changes_nothing(client, candidate):
    for url in (approve_url(candidate), reject_url(candidate)):
        response = client.post(url, {"reason": "x"})
        assert response.status_code == 302 and "/accounts/login/" in response["Location"]
    assert _unchanged(candidate)


def test_agent_bearer_token_cannot_approve(client, candidate):
    response = client.post(approve_url(candidate), HTTP_AUTHORIZATION="Bearer nw_some_agent_token")
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]
    assert _unchanged(candidate)


@pytest.mark.parametrize("role", ["viewer", "curator"])
def test_viewers_and_curators_get_403(client_for, request, candidate, role):
    client = client_for(request.getfixturevalue(role))
    assert client.post(approve_url(candidate)).status_code == 403
    assert client.post(reject_url(candidate), {"reason": "x"}).status_code == 403
    assert _unchanged(candidate)


def test_get_is_not_allowed(client_for, approver, candidate):
    assert client_for(approver).get(approve_url(candidate)).status_code == 405
    assert _unchanged(candidate)


def test_approve_full_page_redirects_with_a_message(client_for, approver, candidate):
    response = client_for(approver).post(approve_url(candidate), follow=True)
    assert response.redirect_chain[-1][0] == reverse("promotions:inbox")
    html = response.content.decode()
    assert "Promoted to core as lesson" in html
    candidate.refresh_from_db()
    assert candidate.status == "approved"
    assert Lesson.objects.filter(tier="core").count() == 1


def test_approve_htmx_returns_the_card_and_the_badge(client_for, approver, candidate):
    client = client_for(approver)
    response = client.post(approve_url(candidate), HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    html = response.content.decode()
    assert f'id="candidate-{candidate.pk}"' in html
    assert "Approved" in html and "approver" in html
    assert 'hx-swap-oob="true"' in html and ">0</span>" in html
    assert "<html" not in html


def test_edit_then_approve(client_for, approver, candidate):
    client_for(approver).post(
        approve_url(candidate),
        {
            "edit": "1",
            "text": "Stripe webhook: verify then parse",
            "category": "ARCHITECTURE",
            "refs": "src/billing/webhooks.py#L10-L30",
        },
    )
    core = Lesson.objects.get(tier="core")
    assert (core.text, core.category) == ("Stripe webhook: verify then parse", "ARCHITECTURE")


def test_bad_edit_shows_the_error_and_changes_nothing(client_for, approver, candidate):
    response = client_for(approver).post(
        approve_url(candidate), {"edit": "1", "text": "", "category": "PATTERN", "refs": ""}, HTTP_HX_REQUEST="true"
    )
    assert "Not approved: lesson text must not be empty" in response.content.decode()
    assert _unchanged(candidate)


def test_second_approver_sees_already_approved_by(client_for, approver, candidate, django_user_model):
    from django.contrib.auth.models import Group

    client_for(approver).post(approve_url(candidate))
    other = django_user_model.objects.create_user("lead2", password="x")
    other.groups.add(Group.objects.get(name="approver"))
    response = client_for(other).post(approve_url(candidate), HTTP_HX_REQUEST="true")
    assert "already approved by approver" in response.content.decode()
    assert Lesson.objects.filter(tier="core").count() == 1


def test_changed_lessons_ask_for_review_and_refresh_the_proposal(
    client_for, approver, candidate, django_capture_on_commit_callbacks
):
    lesson = candidate.supporting.order_by("id").first()
    services.lesson_update(lesson=lesson, actor=SYSTEM, text=lesson.text + " in the billing service")
    with django_capture_on_commit_callbacks(execute=True):
        response = client_for(approver).post(approve_url(candidate), follow=True)
    assert "changed since this was proposed" in response.content.decode()
    candidate.refresh_from_db()
    assert candidate.status == "superseded"
    assert PromotionCandidate.objects.filter(status="pending").count() == 1
    assert not Lesson.objects.filter(tier="core").exists()


def test_over_budget_warning_is_shown(client_for, approver, memory, candidate):
    memory.core_char_budget = 30
    memory.save()
    html = client_for(approver).post(approve_url(candidate), follow=True).content.decode()
    assert "over its budget of 30" in html


def test_reject_needs_a_reason_then_records_it(client_for, approver, candidate):
    client = client_for(approver)
    html = client.post(reject_url(candidate), {"reason": ""}, HTTP_HX_REQUEST="true").content.decode()
    assert "Not rejected" in html
    assert _unchanged(candidate)
    html = client.post(reject_url(candidate), {"reason": "Covered by ADR-7"}, HTTP_HX_REQUEST="true").content.decode()
    assert "Rejected" in html and "Covered by ADR-7" in html
    candidate.refresh_from_db()
    assert candidate.status == "rejected" and candidate.reason == "Covered by ADR-7"


def test_unknown_candidate_is_404(client_for, approver):
    assert client_for(approver).post(reverse("promotions:approve", args=[999999])).status_code == 404


def test_refused_edit_keeps_the_reviewers_draft(client_for, approver, candidate):
    html = (
        client_for(approver)
        .post(
            approve_url(candidate),
            {"edit": "1", "text": "My better wording", "category": "DECISION", "refs": "bad ref (x)"},
            HTTP_HX_REQUEST="true",
        )
        .content.decode()
    )
    assert "Not approved" in html and "My better wording</textarea>" in html
    assert '<option value="DECISION" selected>' in html
    assert _unchanged(candidate)
