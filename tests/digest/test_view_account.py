"""The account page: a person turns their daily review digest off and on."""

import pytest

from memory.digest.selectors import digest_recipients
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
