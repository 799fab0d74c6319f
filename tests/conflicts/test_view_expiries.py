"""The expiries page: proposed expiries and expired lessons, escaped, paginated, scoped to the
person's teams, as a full page or (htmx) the list alone."""

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from memory import services
from memory.conflicts.expiry_selectors import PAGE_SIZE
from personas.models import Membership
from tests.conflicts.expiry_helpers import propose
from tests.factories import SYSTEM, make_lesson

pytestmark = pytest.mark.django_db
URL = reverse("conflicts:expiries")


def _expired(memory, text):
    lesson = make_lesson(memory, text)
    return services.lesson_set_expiry(lesson=lesson, expires_on=timezone.localdate() - timedelta(days=2), actor=SYSTEM)


def test_proposals_show_escaped_with_what_was_proposed_and_viewers_get_no_buttons(memory, viewer, client_for):
    proposal = propose(memory, "Serve <script>alert(1)</script> banners until 2026-12-24.")
    page = client_for(viewer).get(URL).content.decode()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "<script>alert(1)" not in page
    assert f'id="expiry-{proposal.pk}"' in page and "expires on 2026-12-24" in page
    assert 'value="accept"' not in page and 'name="proposal"' not in page
    assert 'href="/conflicts/"' in page  # back to the conflicts


def test_an_approver_gets_the_decision_form_prefilled_and_the_bulk_bar(memory, approver, client_for):
    proposal = propose(memory, "Pin the old resolver until 2026-12-24.")
    page = client_for(approver).get(URL).content.decode()
    assert f'action="{reverse("conflicts:expiry-decide", args=[proposal.pk])}"' in page
    assert 'name="expires_on" value="2026-12-24"' in page
    assert f'name="proposal" value="{proposal.pk}" form="expiries-bulk"' in page and 'id="expiries-bulk"' in page


def test_expired_lessons_are_listed_with_restore_and_retire(memory, approver, client_for):
    lesson = _expired(memory, "Use the <b>staging</b> mirror for the migration week.")
    page = client_for(approver).get(URL, {"show": "expired"}).content.decode()
    assert f'id="expired-{lesson.pk}"' in page and "&lt;b&gt;staging&lt;/b&gt;" in page
    assert "badge-expired" in page and "Restore" in page and "Retire" in page
    assert 'data-count="expired">1<' in page and 'data-count="proposals">0<' in page


def test_empty_states(viewer, client_for, db):
    client = client_for(viewer)
    assert "No proposed expiry is waiting" in client.get(URL).content.decode()
    assert "No lesson has expired" in client.get(URL, {"show": "expired"}).content.decode()


def test_another_teams_items_never_show(team_memory, django_user_model, client_for):
    memory, other = team_memory("mine"), team_memory("other")
    propose(memory, "Mirror notes of mine until 2026-12-24.")
    propose(other, "Mirror secrets of Persona-other until 2026-12-24.")
    _expired(other, "Expired secret of Persona-other.")
    outsider = django_user_model.objects.create_user("outsider")
    Membership.objects.create(team=memory.project.team, user=outsider, role="approver")
    client = client_for(outsider)
    for show in ("proposals", "expired"):
        page = client.get(URL, {"show": show}).content.decode()
        assert "Persona-other" not in page, show
    assert "Persona-mine" in client.get(URL).content.decode()


def test_pages_and_the_htmx_list(memory, viewer, client_for):
    for i in range(PAGE_SIZE + 2):
        propose(memory, f"Route job {i} to the old queue until 2026-12-24.")
    client = client_for(viewer)
    first = client.get(URL).content.decode()
    assert first.count('class="card expiry"') == PAGE_SIZE and "Page 1 of 2" in first
    second = client.get(
        URL, {"show": "proposals", "page": 2}, headers={"HX-Request": "true", "HX-Target": "expiry-list"}
    )
    body = second.content.decode()
    assert (
        body.count('class="card expiry"') == 2
        and "<html" not in body
        and body.lstrip().startswith('<div id="expiry-list"')
    )


def test_the_list_costs_the_same_queries_however_many_items(memory, approver, client_for, django_assert_num_queries):
    client = client_for(approver)
    propose(memory, "Route mail to the old relay until 2026-12-24.")
    _expired(memory, "Old expired note 0.")
    for show in ("proposals", "expired"):
        with CaptureQueriesContext(connection) as few:
            client.get(URL, {"show": show})
        for i in range(6):
            propose(memory, f"Route report {i} to the old bucket until 2026-12-24.")
            _expired(memory, f"Old expired note {i + 1} {show}.")
        # session, user, memberships, the review badge, the counts of both lists and one page of rows
        with django_assert_num_queries(len(few.captured_queries)):
            page = client.get(URL, {"show": show}).content.decode()
        assert page.count('class="card expiry') >= 7


def test_anonymous_goes_to_login(client, db):
    response = client.get(URL)
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]
