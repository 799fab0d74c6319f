"""The account page: a person turns their daily review digest off and on."""

import pytest

from memory.digest.selectors import digest_recipients
from personas.models import Membership, Team
from tests.views.conftest import assert_login_redirect

pytestmark = pytest.mark.django_db
URL = "/account/"


def test_anonymous_goes_to_login(client):
    assert_login_redirect(client.get(URL))


def test_approver_turns_the_digest_off_and_on(client_for, approver):
    approver.email = "ada@example.com"
    approver.save()
    client = client_for(approver)
    html = client.get(URL).content.decode()
    assert 'name="daily_digest" id="id_daily_digest" checked' in html and "Sent to ada@example.com" in html
    response = client.post(URL, {}, follow=True)
    assert "Daily digest turned off" in response.content.decode()
    assert 'id="id_daily_digest" checked' not in response.content.decode()
    assert list(digest_recipients()) == []
    client.post(URL, {"daily_digest": "on"})
    assert list(digest_recipients()) == [approver]


def test_a_viewer_is_told_no_digest_is_sent(client_for, viewer):
    html = client_for(viewer).get(URL).content.decode()
    assert "not an approver" in html and "no email address" in html


def test_the_header_links_the_account_page(client_for, viewer):
    assert f'href="{URL}" title="Your account">viewer<' in client_for(viewer).get(URL).content.decode()


@pytest.fixture
def team_member(django_user_model):
    """A person who holds roles through team memberships only, in no site-wide group."""

    def make(username, **roles):
        user = django_user_model.objects.create_user(username, email=f"{username}@example.com")
        for team_name, role in roles.items():
            team, _ = Team.objects.get_or_create(name=team_name.title(), slug=team_name)
            Membership.objects.create(team=team, user=user, role=role)
        return user

    return make


def test_a_team_approver_is_told_the_digest_comes_for_their_teams_and_sees_their_roles(client_for, team_member):
    ada = team_member("ada", red="approver", blue="viewer")
    html = client_for(ada).get(URL).content.decode()
    assert "not an approver" not in html
    assert "You are an approver of Red: your digest lists what waits in that team&#x27;s memories." in html
    assert "<td>Blue</td><td>Viewer</td>" in html and "<td>Red</td><td>Approver</td>" in html
    assert list(digest_recipients()) == [ada]  # the page says what the digest does


def test_the_page_says_digest_or_not_exactly_for_those_the_digest_reaches(
    client_for, team_member, approver, curator, django_user_model
):
    approver.email, curator.email = "approver@example.com", "curator@example.com"
    approver.save()
    curator.save()
    people = [
        approver,
        curator,
        team_member("cleo", red="curator"),
        team_member("dev", red="approver"),
        django_user_model.objects.create_superuser("root", email="root@example.com"),
    ]
    told = {person for person in people if "not an approver" not in client_for(person).get(URL).content.decode()}
    assert told == set(digest_recipients())
    assert {person.username for person in told} == {"approver", "dev", "root"}
