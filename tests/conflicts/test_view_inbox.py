"""The conflict list (/conflicts/): who sees what, the cards, the keys, the pages, and a fixed number of queries."""

import re

import pytest
from django.urls import reverse

from memory.access import EVERY_MEMORY
from memory.conflicts import CONFLICT_MARK
from memory.conflicts.selectors import INBOX_ROWS
from memory.review_queue import counts_by_source
from tests.conflicts.conftest import make_conflict
from tests.factories import make_lesson

pytestmark = pytest.mark.django_db
URL = reverse("conflicts:inbox")


def test_anonymous_is_sent_to_login_and_no_role_is_forbidden(client, client_for, django_user_model):
    response = client.get(URL)
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]
    nobody = django_user_model.objects.create_user("nobody", password="x")
    assert client_for(nobody).get(URL).status_code == 403


def test_a_viewer_reads_both_lessons_escaped_without_decisions(memory, viewer, client_for):
    conflict = make_conflict(memory, old="<b>webpack</b>", new="<b>vite</b>")
    html = client_for(viewer).get(URL).content.decode()
    assert f"Conflict #{conflict.pk}" in html and CONFLICT_MARK in html
    assert "&lt;b&gt;webpack&lt;/b&gt;" in html and "&lt;b&gt;vite&lt;/b&gt;" in html and "<b>vite" not in html
    assert "Only approvers can decide conflicts." in html
    assert reverse("conflicts:decide", args=[conflict.pk]) not in html and 'id="bulk-form"' not in html
    assert 'class="triage-select"' not in html and "<kbd>n</kbd>" not in html  # no keys that decide
    assert 'data-can-approve=""' in html


def test_an_approver_gets_the_decisions_their_keys_and_the_edit_forms(conflict, approver, client_for):
    html = client_for(approver).get(URL).content.decode()
    decide = reverse("conflicts:decide", args=[conflict.pk])
    assert f'hx-post="{decide}"' in html and f'action="{decide}"' in html  # htmx, and a plain form without it
    for key, label in (("n", "Keep the newer"), ("o", "Keep the older"), ("b", "Keep both")):
        assert re.search(
            rf'data-key="{key}"[^>]*>{label} <kbd class="key-hint" aria-hidden="true">{key}</kbd></button>', html
        )
        assert f"<dt><kbd>{key}</kbd></dt>" in html
    assert "Edit the newer, then keep it" in html and "Edit the older, then keep it" in html
    assert html.count('data-key="e"') == 1 and html.count('data-key="E"') == 1
    assert f'id="select-{conflict.pk}"' in html and 'data-noun="conflict"' in html and 'data-can-approve="1"' in html
    assert "src/queue/worker.py#L10-L12" in html  # the older lesson's refs, in its edit form too
    assert html.count('value="src/queue/worker.py#L10-L12"') == 1


def test_another_teams_conflicts_are_not_listed(team_memory, team_member, client_for):
    red, blue = team_memory("red"), team_memory("blue")
    mine, theirs = make_conflict(red, 1), make_conflict(blue, 2)
    lead = team_member("lead", {red.project.team: "approver"})
    html = client_for(lead).get(URL).content.decode()
    assert f"Conflict #{mine.pk}" in html and f"Conflict #{theirs.pk}" not in html
    assert "Queue 2 workers" not in html and "1 conflict</span>" in html


def test_a_long_list_is_paged_with_its_count(memory, viewer, client_for):
    conflicts = [make_conflict(memory, n) for n in range(INBOX_ROWS + 3)]
    client = client_for(viewer)
    first = client.get(URL).content.decode()
    assert f"{INBOX_ROWS + 3} conflicts</span>, newest first · page 1 of 2" in first
    assert first.count('class="card conflict triage-card') == INBOX_ROWS
    assert f"Conflict #{conflicts[-1].pk}<" in first and f"Conflict #{conflicts[0].pk}<" not in first
    second = client.get(URL, {"page": 2}).content.decode()
    assert second.count('class="card conflict triage-card') == 3 and f"Conflict #{conflicts[0].pk}<" in second
    assert 'rel="prev" href="?page=1"' in second
    # A page number that is not one shows a page rather than an error.
    assert client.get(URL, {"page": "99"}).status_code == 200
    assert client.get(URL, {"page": "x"}).status_code == 200


def test_an_empty_list_says_so(approver, client_for):
    html = client_for(approver).get(URL).content.decode()
    assert "No conflict is waiting for review." in html and 'id="bulk-form"' not in html


def test_a_conflict_whose_lesson_was_retired_leaves_the_list(memory, conflict, viewer, client_for):
    from memory import services

    services.lesson_delete(lesson=conflict.newer, actor=services.Actor.system("tests"))
    assert f"Conflict #{conflict.pk}" not in client_for(viewer).get(URL).content.decode()
    assert counts_by_source(EVERY_MEMORY)["conflicts"].get(memory.pk) is None


def test_hidden_characters_show_as_markers(memory, approver, client_for):
    from datetime import date

    from memory.conflicts.services import conflicts_detect
    from tests.hidden import HIDDEN_TEXT, assert_hidden_characters_shown

    make_lesson(memory, HIDDEN_TEXT + " with celery", day=date(2026, 1, 1))
    make_lesson(memory, HIDDEN_TEXT + " with dramatiq", day=date(2026, 2, 1))
    conflicts_detect(memory=memory)
    assert_hidden_characters_shown(client_for(approver).get(URL).content.decode())


def test_the_list_costs_the_same_queries_however_many_conflicts(
    memory, approver, client_for, django_assert_num_queries
):
    client = client_for(approver)
    make_conflict(memory, 0, refs="src/a.py")
    client.get(URL)  # warm the permission cache of the session user
    # session, user, the user's own permissions and those of the user's groups, the count of pending
    # conflicts (paginator), the review queue's counts for the nav (one UNION of every source), the
    # page's conflicts with both lessons and the memory's names, the older lessons' refs, the newer's
    with django_assert_num_queries(9) as first:
        client.get(URL)
    for n in range(1, 8):
        make_conflict(memory, n, refs=f"src/q{n}.py")
    with django_assert_num_queries(len(first.captured_queries)):
        html = client.get(URL).content.decode()
    assert html.count('class="card conflict triage-card') == 8 and html.count('class="lesson-text"') == 16


def test_pending_conflicts_count_in_the_review_queue(conflict, memory):
    assert counts_by_source(EVERY_MEMORY)["conflicts"].get(memory.pk) == 1


def test_one_person_decides_in_one_team_and_only_reads_in_another(team_memory, team_member, client_for):
    red, blue = team_memory("red"), team_memory("blue")
    mine, only_read = make_conflict(red, 1), make_conflict(blue, 2)
    lead = team_member("lead", {red.project.team: "approver", blue.project.team: "viewer"})
    html = client_for(lead).get(URL).content.decode()
    red_card = html[html.index(f'id="conflict-{mine.pk}"') :][:8000].split("</article>")[0]
    blue_card = html[html.index(f'id="conflict-{only_read.pk}"') :][:8000].split("</article>")[0]
    assert reverse("conflicts:decide", args=[mine.pk]) in red_card and 'class="triage-select"' in red_card
    assert "data-cannot" not in red_card
    assert reverse("conflicts:decide", args=[only_read.pk]) not in blue_card and "triage-select" not in blue_card
    assert 'data-cannot="Only approvers of its team can decide this conflict."' in blue_card
    assert "Only approvers can decide conflicts." in blue_card and 'id="bulk-form"' in html
