"""`manage.py demo_login`: a local-only login for trying the product."""

import io
import re

import pytest
from django.contrib.auth import authenticate, get_user_model
from django.core.management import CommandError, call_command
from django.test import RequestFactory


def _run(**kwargs):
    out = io.StringIO()
    call_command("demo_login", stdout=out, **kwargs)
    return out.getvalue()


def _password(output):
    return re.search(r"Password: (\S+)", output).group(1)


@pytest.mark.django_db
def test_creates_an_approver_with_admin_access_and_prints_how_to_log_in(settings, client):
    settings.DEBUG = True
    output = _run()
    assert "http://127.0.0.1:8000/" in output and "User:     demo" in output
    user = get_user_model().objects.get(username="demo")
    assert user.is_staff and user.is_superuser
    assert user.groups.filter(name="approver").exists()
    assert user.has_perm("memory.approve_memory")
    response = client.post("/accounts/login/", {"username": "demo", "password": _password(output)})
    assert response.status_code == 302
    assert client.get("/admin/personas/persona/").status_code == 200


@pytest.mark.django_db
def test_running_again_resets_the_password(settings):
    settings.DEBUG = True
    first = _password(_run())
    output = _run()
    second = _password(output)
    assert "Reset the demo login" in output
    assert first != second
    assert authenticate(RequestFactory().post("/accounts/login/"), username="demo", password=second) is not None
    assert authenticate(RequestFactory().post("/accounts/login/"), username="demo", password=first) is None
    assert get_user_model().objects.filter(username="demo").count() == 1


@pytest.mark.django_db
def test_a_chosen_password(settings):
    settings.DEBUG = True
    _run(password="correct-horse-battery")
    assert (
        authenticate(RequestFactory().post("/accounts/login/"), username="demo", password="correct-horse-battery")
        is not None
    )


@pytest.mark.django_db
def test_refuses_when_debug_is_off(settings):
    settings.DEBUG = False
    with pytest.raises(CommandError, match="only runs with DEBUG on"):
        _run()
    assert not get_user_model().objects.filter(username="demo").exists()


@pytest.mark.django_db
def test_prints_a_chosen_address(settings):
    settings.DEBUG = True
    output = _run(url="http://127.0.0.1:8123")
    assert "Open:     http://127.0.0.1:8123/" in output and "Admin:    http://127.0.0.1:8123/admin/" in output
