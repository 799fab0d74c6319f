"""POST /promotions/bulk/: approve or reject the selected candidates, with or without htmx."""

import pytest
from django.urls import reverse

from memory import services
from memory.models import PromotionBulkDecision, PromotionCandidate
from memory.promotions.services import promotion_reject
from tests.promotions.conftest import pending_candidates as _pending

pytestmark = pytest.mark.django_db
URL = reverse("promotions:bulk")
HTMX = {"HX-Request": "true"}


def test_viewer_cannot_decide_in_bulk(client_for, viewer):
    (candidate,) = _pending(1)
    response = client_for(viewer).post(URL, {"candidate": [candidate.pk], "action": "approve"})
    assert response.status_code == 403
    assert PromotionCandidate.objects.get().status == "pending"


def test_get_is_not_allowed(client_for, approver):
    assert client_for(approver).get(URL).status_code == 405


def test_plain_post_approves_and_comes_back_to_the_same_inbox_page(client_for, approver):
    a, b, _c = _pending(3)
    response = client_for(approver).post(
        URL, {"candidate": [a.pk, b.pk], "action": "approve", "next": "kind=recurring&page=1"}, follow=True
    )
    assert response.redirect_chain[-1][0] == reverse("promotions:inbox") + "?kind=recurring&page=1"
    page = response.content.decode()
    assert f"Approved 2 of 2: #{a.pk}, #{b.pk}." in page
    assert sorted(PromotionCandidate.objects.filter(status="approved").values_list("pk", flat=True)) == [a.pk, b.pk]
    # The lot is listed once among recent bulk decisions; each candidate among recent decisions.
    assert "Bulk approval #" in page and "2 of 2 decided" in page


def test_htmx_reject_reports_who_decided_first_and_swaps_every_card(client_for, approver, django_user_model):
    from django.contrib.auth.models import Group

    other = django_user_model.objects.create_user("carol", password="x")
    other.groups.add(Group.objects.get(name="approver"))
    a, b = _pending(2)
    promotion_reject(candidate=a, actor=services.Actor.for_user(other), reason="Not general")
    response = client_for(approver).post(
        URL, {"candidate": [a.pk, b.pk], "action": "reject", "reason": "Too narrow"}, headers=HTMX
    )
    html = response.content.decode()
    assert "Rejected 1 of 2" in html
    assert f"Already decided by someone else: #{a.pk} (rejected by carol)." in html
    assert html.count('hx-swap-oob="true"') >= 3  # both cards and the nav badge
    assert f'id="candidate-{b.pk}"' in html and "Too narrow" in html
    assert "<html" not in html
    assert PromotionCandidate.objects.get(pk=b.pk).reason == "Too narrow"


@pytest.mark.parametrize(
    "data, message",
    [
        ({"action": "reject", "reason": ""}, "Say why the proposal is rejected"),
        ({"action": "approve", "candidate": ["1", "x"]}, "not a candidate number"),
        ({"action": "shred"}, "Choose approve or reject"),
        ({"action": "approve", "candidate": []}, "Select at least one candidate"),
    ],
)
def test_a_bad_request_says_why_and_changes_nothing(client_for, approver, data, message):
    (candidate,) = _pending(1)
    data = {"candidate": [candidate.pk], **data}
    client = client_for(approver)
    html = client.post(URL, data, headers=HTMX).content.decode()
    assert message in html and "Nothing was decided" in html
    page = client.post(URL, data, follow=True).content.decode()
    assert message in page
    assert PromotionCandidate.objects.get().status == "pending"
    assert not PromotionBulkDecision.objects.exists()


def test_an_unknown_candidate_is_reported_and_the_rest_go_through(client_for, approver):
    (candidate,) = _pending(1)
    html = (
        client_for(approver)
        .post(URL, {"candidate": [candidate.pk, 987654], "action": "approve"}, headers=HTMX)
        .content.decode()
    )
    assert "Approved 1 of 1" in html and "#987654: Candidate #987654 does not exist." in html
