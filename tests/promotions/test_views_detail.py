"""The page of one candidate, in any state."""

import pytest
from django.urls import reverse

from memory import services
from memory.promotions.services import promotion_approve

pytestmark = pytest.mark.django_db


def test_detail_shows_the_decision_and_the_core_lesson(
    client_for, viewer, approver, candidate, django_assert_max_num_queries
):
    promotion_approve(candidate=candidate, actor=services.Actor.for_user(approver), text="Verify, then parse webhooks")
    client = client_for(viewer)
    client.get(reverse("promotions:detail", args=[candidate.pk]))
    with django_assert_max_num_queries(12):
        response = client.get(reverse("promotions:detail", args=[candidate.pk]))
    html = response.content.decode()
    assert "Approved" in html and "approver" in html
    assert "Verify, then parse webhooks" in html and "edited" in html


def test_detail_404_and_login(client, client_for, viewer):
    url = reverse("promotions:detail", args=[424242])
    assert client.get(url).status_code == 302
    assert client_for(viewer).get(url).status_code == 404


def test_decision_from_the_detail_page_returns_there(client_for, approver, candidate):
    client = client_for(approver)
    page = client.get(reverse("promotions:detail", args=[candidate.pk])).content.decode()
    assert 'name="next" value="detail"' in page
    response = client.post(reverse("promotions:reject", args=[candidate.pk]), {"reason": "dup", "next": "detail"})
    assert response["Location"] == reverse("promotions:detail", args=[candidate.pk])


def test_hidden_characters_show_as_markers_with_a_warning(client_for, approver, memory):
    from datetime import date

    from memory.promotions.services import promotion_detect
    from tests.factories import make_lesson
    from tests.hidden import HIDDEN_TEXT, assert_hidden_characters_shown

    for day in (1, 2, 3):
        make_lesson(memory, HIDDEN_TEXT, day=date(2026, 6, day))
    (candidate,) = promotion_detect(memory=memory).created
    url = reverse("promotions:detail", args=[candidate.pk])
    assert_hidden_characters_shown(client_for(approver).get(url).content.decode())
    # Once approved, the core lesson it became is shown the same way.
    promotion_approve(candidate=candidate, actor=services.Actor.for_user(approver))
    assert_hidden_characters_shown(client_for(approver).get(url).content.decode())


def test_detail_says_how_the_candidate_was_found(client_for, viewer, model_candidate, django_assert_max_num_queries):
    client = client_for(viewer)
    url = reverse("promotions:detail", args=[model_candidate.pk])
    client.get(url)
    with django_assert_max_num_queries(12):
        html = client.get(url).content.decode()
    assert "Found by the model" in html and "Checked by openai" in html
    assert "&lt;b&gt;All three&lt;/b&gt;" in html and "<b>All three</b>" not in html
