"""Receivers inside the organisation's network are refused when saved and again when sent to."""

import socket

import pytest
from django.core.exceptions import ValidationError

from memory.webhooks import transport
from memory.webhooks.services import webhook_endpoint_create

pytestmark = pytest.mark.django_db

REFUSED = [
    "https://10.0.0.5/hook",
    "https://192.168.1.20/hook",
    "https://172.16.3.4/hook",
    "https://127.0.0.1:8000/hook",
    "https://[::1]/hook",
    "https://169.254.169.254/latest/meta-data/",  # a cloud's metadata service (link-local)
    "https://[fe80::1]/hook",
    "https://0.0.0.0/hook",
    "https://[::ffff:10.0.0.1]/hook",  # an IPv4 private address written as IPv6
    "https://localhost/hook",
]


@pytest.mark.parametrize("url", REFUSED)
def test_private_loopback_and_link_local_receivers_are_refused_at_save(url, settings):
    settings.DEBUG = False
    settings.WEBHOOKS_ALLOW_PRIVATE = False
    with pytest.raises(ValidationError) as exc:
        webhook_endpoint_create(team=None, url=url, event_types=["review.waiting"])
    assert "url" in exc.value.message_dict


def test_plain_http_and_credentials_in_the_url_are_refused(settings):
    settings.DEBUG = False
    for url, words in [
        ("http://hooks.example.com/x", "https://"),
        ("https://user:pw@hooks.example.com/x", "password"),
        ("ftp://hooks.example.com/x", "https://"),
        ("https:///nohost", "host"),
    ]:
        with pytest.raises(ValidationError) as exc:
            webhook_endpoint_create(team=None, url=url, event_types=["review.waiting"])
        assert words in str(exc.value.message_dict["url"])


def test_loopback_is_allowed_with_debug_and_private_networks_with_the_setting(settings):
    settings.WEBHOOKS_ALLOW_PRIVATE = False
    settings.DEBUG = True
    assert transport.url_problem("http://127.0.0.1:9000/hook") == ""
    assert "private" in transport.url_problem("http://10.1.2.3/hook")
    settings.DEBUG = False
    settings.WEBHOOKS_ALLOW_PRIVATE = True
    assert transport.url_problem("http://10.1.2.3/hook") == ""


def test_unknown_event_types_and_formats_are_refused(settings):
    with pytest.raises(ValidationError) as exc:
        webhook_endpoint_create(
            team=None, url="https://8.8.8.8/hook", event_types=["review.waiting", "lesson.eaten"], format="xml"
        )
    assert set(exc.value.message_dict) == {"event_types", "format"}


def test_a_name_that_resolves_to_a_private_address_at_send_time_is_refused_there(monkeypatch, settings):
    """DNS rebinding: public when saved, private when sent; the address is checked at connect."""
    settings.DEBUG = False
    settings.WEBHOOKS_ALLOW_PRIVATE = False
    answers = iter(["93.184.216.34", "10.0.0.7"])

    def resolve(host, port, *args, **kwargs):
        address = next(answers)
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port))]

    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    assert transport.url_problem("https://rebind.example.com/hook") == ""
    answer = transport.post("https://rebind.example.com/hook", b"{}", {})
    assert answer.status is None and "10.0.0.7" in answer.error and "private" in answer.error


def test_the_connected_peer_is_checked_too(monkeypatch, settings, httpserver):
    """Even when the lookup said public, a socket that reached a loopback address is closed unsent."""
    settings.DEBUG = False
    settings.WEBHOOKS_ALLOW_PRIVATE = False
    httpserver.expect_request("/hook").respond_with_data("ok")
    real_connect = socket.socket.connect

    def resolve(host, port, *args, **kwargs):
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("93.184.216.34", port))]

    def connect(sock, address):  # the network sends it somewhere else than the lookup said
        return real_connect(sock, ("127.0.0.1", httpserver.port))

    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    monkeypatch.setattr(socket.socket, "connect", connect)
    answer = transport.post(f"http://public.example.com:{httpserver.port}/hook", b"{}", {})
    assert answer.status is None and "loopback" in answer.error
    assert len(httpserver.log) == 0


def test_redirects_are_not_followed(httpserver, settings):
    settings.WEBHOOKS_ALLOW_PRIVATE = True
    httpserver.expect_request("/hook").respond_with_data("", status=302, headers={"Location": "/elsewhere"})
    answer = transport.post(httpserver.url_for("/hook"), b"{}", {"Content-Type": "application/json"})
    assert answer.status == 302 and not answer.ok
    assert [request.path for request, _ in httpserver.log] == ["/hook"]
