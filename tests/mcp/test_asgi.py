"""nightwatch.asgi: /mcp/ goes to the MCP server, every other path to Django, in one process."""

import json
import urllib.error
import urllib.request

import pytest

pytestmark = pytest.mark.django_db(transaction=True)


def get(url, headers=None):
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers or {}), timeout=30) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def test_django_and_mcp_share_one_deployment(mcp_http):
    assert get(mcp_http.base_url + "/api/v1/health") == (200, b'{"status": "ok"}')
    status, body = get(mcp_http.base_url + "/promotions/")
    assert status == 200 and b'name="username"' in body  # redirected to the login form
    for path in ("/mcp", "/mcp/"):
        status, body = get(mcp_http.base_url + path)
        assert status == 401 and "agent token" in json.loads(body)["detail"]


def test_mcp_checks_the_host_as_django_does(mcp_http, settings):
    status, body = get(mcp_http.url, headers={"Host": "evil.example"})
    assert status == 400 and "ALLOWED_HOSTS" in json.loads(body)["detail"]
