import json

import pytest
from standardwebhooks.webhooks import Webhook
from werkzeug import Response

from memory.webhooks.services import webhooks_dispatch


class Receiver:
    """A real HTTP receiver (pytest-httpserver) that checks every request's signature with the
    standardwebhooks library, as a team's own service would, and can be told to fail."""

    def __init__(self, server):
        self.server = server
        self.secrets = {}
        self.received = []  # (path, verified payload, headers)
        self.failures = []  # status codes to answer next, in order (then 200)

    def url(self, path="/hook"):
        return self.server.url_for(path)

    def _handle(self, request):
        if self.failures:
            return Response("down", status=self.failures.pop(0))
        secret = self.secrets[request.path]
        payload = Webhook(secret).verify(request.get_data(as_text=True), dict(request.headers))
        self.received.append((request.path, payload, dict(request.headers)))
        return Response("ok", status=200)

    def listen(self, path, secret):
        self.secrets[path] = secret
        self.server.expect_request(path, method="POST").respond_with_handler(self._handle)

    def ids(self, path=None):
        return [h["Webhook-Id"] for p, _, h in self.received if path is None or p == path]

    def types(self, path=None):
        return [body["type"] for p, body, _ in self.received if path is None or p == path]


@pytest.fixture
def receiver(httpserver, settings):
    settings.WEBHOOKS_ALLOW_PRIVATE = True  # the receiver listens on this machine
    return Receiver(httpserver)


@pytest.fixture
def deliver():
    """Run the worker's pass (fan out, send what is due) as many times as asked."""

    def run(times=1):
        for _ in range(times):
            webhooks_dispatch()

    return run


def body(request_headers_and_body):
    return json.loads(request_headers_and_body)


# The refs tests' fixtures (a real git checkout whose lines move under a memory's refs).
from tests.refs.conftest import checked_memory, checked_project, drifted, repo  # noqa: E402, F401
