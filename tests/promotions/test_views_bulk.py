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


def test_the_limit_counts_every_candidate_asked_for_even_unknown_ones(client_for, approver):
    from memory.promotions.decisions import BULK_MAX

    real = _pending(2)
    unknown = [900_000 + i for i in range(BULK_MAX + 1 - len(real))]
    data = {"candidate": [c.pk for c in real] + unknown, "action": "approve"}
    client = client_for(approver)
    html = client.post(URL, data, headers=HTMX).content.decode()
    assert f"Nothing was decided: Decide at most {BULK_MAX} candidates at once" in html
    assert "does not exist" not in html
    page = client.post(URL, data, follow=True).content.decode()
    assert f"Decide at most {BULK_MAX} candidates at once" in page
    assert set(PromotionCandidate.objects.values_list("status", flat=True)) == {"pending"}
    assert not PromotionBulkDecision.objects.exists()


def _team_candidate(label):
    from personas.models import Team
    from tests.factories import MemoryFactory, PersonaFactory, ProjectFactory, make_lesson

    team = Team.objects.create(name=f"Team {label}", slug=f"team-{label}")
    memory = MemoryFactory(persona=PersonaFactory(team=team), project=ProjectFactory(team=team))
    candidate = PromotionCandidate.objects.create(
        memory=memory, text=f"Core of {label}", category="PATTERN", evidence={}, fingerprint=label, engine="offline"
    )
    candidate.supporting.add(make_lesson(memory, f"Retry the {label} webhook with backoff"))
    return team, candidate


def test_a_selection_of_nothing_this_person_may_decide_names_what_was_asked(client, django_user_model):
    from memory.roles import ensure_role_groups
    from personas.models import Membership

    ensure_role_groups()
    (red, _), (blue, only_read), (_, hidden) = _team_candidate("red"), _team_candidate("blue"), _team_candidate("gray")
    lead = django_user_model.objects.create_user("lead")
    Membership.objects.create(team=red, user=lead, role="approver")
    Membership.objects.create(team=blue, user=lead, role="viewer")
    client.force_login(lead)
    data = {"candidate": [987654, only_read.pk, hidden.pk], "action": "approve"}
    expected = f"Candidates 987654, {only_read.pk}, {hidden.pk} do not exist or are not yours to decide."
    for response in (client.post(URL, data, headers=HTMX), client.post(URL, data, follow=True)):
        html = response.content.decode()
        assert "Nothing was decided: " + expected in html
        assert "Select at least one" not in html
    assert set(PromotionCandidate.objects.values_list("status", flat=True)) == {"pending"}
    assert not PromotionBulkDecision.objects.exists()
