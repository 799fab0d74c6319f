"""Deciding several conflicts at once (POST /conflicts/bulk/): each its own revertible batch, htmx
gets the outcome and the cards, a plain form a message with a link to revert each batch."""

import re

import pytest
from django.urls import reverse

from memory.models import ChangeBatch, Lesson, LessonConflict, LessonStatus
from tests.conflicts.conftest import HTMX, make_conflict

pytestmark = pytest.mark.django_db
URL = reverse("conflicts:bulk")


def test_keep_both_dismisses_each_selected_conflict(memory, approver, client_for):
    ids = [make_conflict(memory, n).pk for n in range(2)]
    response = client_for(approver).post(URL, {"conflict": ids, "decision": "keep_both"}, follow=True)
    assert f"Decided 2 conflicts: #{ids[0]}, #{ids[1]}." in response.content.decode()
    assert set(LessonConflict.objects.values_list("status", flat=True)) == {"dismissed"}


def test_keep_the_newer_of_each_is_one_batch_each_with_its_revert_link(memory, approver, client_for):
    conflicts = [make_conflict(memory, n) for n in range(3)]
    chosen = [c.pk for c in conflicts[:2]]
    response = client_for(approver).post(URL, {"conflict": chosen, "decision": "keep_newer", "page": "1"})
    assert response.status_code == 302 and response["Location"] == reverse("conflicts:inbox")
    html = client_for(approver).get(response["Location"]).content.decode()
    decided = LessonConflict.objects.filter(pk__in=chosen).order_by("pk")
    assert len({c.batch_id for c in decided}) == 2
    for conflict in decided:
        assert f'href="{memory.history_url()}#batch-{conflict.batch_id}"' in html
        assert Lesson.objects.get(pk=conflict.older_id).status == LessonStatus.SUPERSEDED
    assert LessonConflict.objects.get(pk=conflicts[2].pk).status == "pending"
    assert f"Conflict #{conflicts[2].pk}<" in html and f"Conflict #{chosen[0]}<" not in html


def test_htmx_gets_the_outcome_and_each_card_in_its_new_state(memory, approver, client_for):
    conflicts = [make_conflict(memory, n) for n in range(2)]
    data = {"conflict": [c.pk for c in conflicts], "decision": "keep_older", "reason": "the move was rolled back"}
    html = client_for(approver).post(URL, data, headers=HTMX).content.decode()
    assert '<div id="bulk-result" hx-swap-oob="innerHTML">' in html and "Decided 2 conflicts" in html
    for conflict in conflicts:
        assert f'id="conflict-{conflict.pk}"' in html and 'hx-swap-oob="true"' in html
        batch = LessonConflict.objects.get(pk=conflict.pk).batch
        assert batch.reason == "the move was rolled back" and f"#batch-{batch.pk}" in html
    assert html.count("Kept the older lesson by <strong>approver</strong>") == 2


def test_a_conflict_decided_meanwhile_is_set_aside_with_the_reason(memory, approver, client_for):
    first, second = make_conflict(memory, 1), make_conflict(memory, 2)
    client = client_for(approver)
    client.post(reverse("conflicts:decide", args=[first.pk]), {"decision": "keep_both"})
    html = client.post(URL, {"conflict": [first.pk, second.pk], "decision": "keep_newer"}, follow=True)
    html = html.content.decode()
    assert f"Decided 1 conflict: #{second.pk}" in html
    assert f"Conflict {first.pk}: this conflict is already dismissed (both hold)" in html


@pytest.mark.parametrize(
    ("data", "said"),
    [
        ({"decision": "keep_both"}, "Nothing decided: Select at least one conflict."),
        ({"conflict": ["1", "x"], "decision": "keep_both"}, "not a conflict number"),
        ({"conflict": ["CONFLICT"], "decision": "edit"}, "Choose keep the newer, keep the older or keep both."),
    ],
)
def test_bad_input_decides_nothing(memory, approver, client_for, data, said):
    conflict = make_conflict(memory)
    data = {**data, "conflict": [str(conflict.pk) if v == "CONFLICT" else v for v in data.get("conflict", [])]}
    batches = ChangeBatch.objects.count()
    for response in (
        client_for(approver).post(URL, data, follow=True),
        client_for(approver).post(URL, data, headers=HTMX),
    ):
        assert said in response.content.decode()
    assert LessonConflict.objects.get().status == "pending" and ChangeBatch.objects.count() == batches


def test_a_viewer_may_not_and_another_teams_conflicts_are_not_there(team_memory, team_member, client_for, viewer):
    red, blue = team_memory("red"), team_memory("blue")
    mine, theirs = make_conflict(red, 1), make_conflict(blue, 2)
    assert client_for(viewer).post(URL, {"conflict": [mine.pk], "decision": "keep_both"}).status_code == 403
    lead = team_member("lead", {red.project.team: "approver", blue.project.team: "viewer"})
    response = client_for(lead).post(URL, {"conflict": [theirs.pk], "decision": "keep_both"}, follow=True)
    assert f"Conflict {theirs.pk} does not exist or is not yours to decide." in response.content.decode()
    response = client_for(lead).post(URL, {"conflict": [mine.pk, theirs.pk], "decision": "keep_both"}, follow=True)
    assert f"Decided 1 conflict: #{mine.pk}." in response.content.decode()
    assert LessonConflict.objects.get(pk=theirs.pk).status == "pending"


def test_each_revert_link_opens_the_page_of_history_that_shows_its_batch(memory, approver, client_for):
    from memory.lessons.views.history import BATCHES_PER_PAGE

    conflicts = [make_conflict(memory, n) for n in range(BATCHES_PER_PAGE + 2)]
    client = client_for(approver)
    data = {"conflict": [c.pk for c in conflicts], "decision": "keep_newer"}
    html = client.post(URL, data, follow=True).content.decode()
    links = re.findall(r'class="revert-link" href="([^"]+)"', html)
    assert len(links) == len(conflicts)
    first, last = (LessonConflict.objects.get(pk=c.pk).batch_id for c in (conflicts[0], conflicts[-1]))
    assert f"{memory.history_url()}?page=2#batch-{first}" in links
    assert f"{memory.history_url()}#batch-{last}" in links
    for link, batch in ((f"{memory.history_url()}?page=2", first), (memory.history_url(), last)):
        assert f'id="batch-{batch}"' in client.get(link).content.decode()
