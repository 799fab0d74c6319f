"""Login throttling (django-axes): after AXES_FAILURE_LIMIT wrong passwords for one user from one
address, even the right password is refused with a clear page, on the site and on the admin, until
an administrator unlocks it (`manage.py axes_reset_username`) or the cool-off passes."""

import io

import pytest
from django.conf import settings
from django.core.management import call_command

pytestmark = pytest.mark.django_db

PASSWORD = "right-horse-battery-staple"
SITE, ADMIN = "/accounts/login/", "/admin/login/"


@pytest.fixture
def lead(django_user_model):
    return django_user_model.objects.create_user(username="lead", password=PASSWORD, is_staff=True)


def attempt(client, url, password, ip="10.0.0.5"):
    return client.post(url, {"username": "lead", "password": password, "next": "/"}, REMOTE_ADDR=ip)


def logged_in(client):
    return "_auth_user_id" in client.session


def fail_until_locked(client, url, ip="10.0.0.5"):
    for _ in range(settings.AXES_FAILURE_LIMIT):
        response = attempt(client, url, "wrong", ip)
        assert response.status_code in (200, 429)


@pytest.mark.parametrize("url", [SITE, ADMIN])
def test_repeated_failures_lock_out_even_the_right_password(client, lead, url):
    fail_until_locked(client, url)
    response = attempt(client, url, PASSWORD)
    assert response.status_code == 429
    page = response.content.decode()
    assert "Too many failed logins" in page and "lead" in page
    assert f"after {settings.AXES_FAILURE_LIMIT} wrong passwords" in page
    assert not logged_in(client)


@pytest.mark.parametrize("url", [SITE, ADMIN])
def test_fewer_failures_then_the_right_password_logs_in(client, lead, url):
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        attempt(client, url, "wrong")
    assert attempt(client, url, PASSWORD).status_code == 302
    assert logged_in(client)


def test_the_lockout_is_per_user_and_address(client, lead):
    fail_until_locked(client, SITE, ip="10.0.0.5")
    assert attempt(client, SITE, PASSWORD, ip="10.0.0.6").status_code == 302
    assert logged_in(client)


def test_an_administrator_unlocks_with_the_command(client, lead):
    fail_until_locked(client, SITE)
    assert attempt(client, SITE, PASSWORD).status_code == 429
    out = io.StringIO()
    call_command("axes_reset_username", "lead", stdout=out)
    assert attempt(client, SITE, PASSWORD).status_code == 302
    assert logged_in(client)


def test_the_admin_lists_lockouts(client, admin_client, lead):
    fail_until_locked(client, SITE)
    response = admin_client.get("/admin/axes/accessattempt/")
    assert response.status_code == 200
    assert "lead" in response.content.decode()
