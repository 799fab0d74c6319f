"""The MCP server over streamable HTTP, mounted at /mcp/ beside Django in one ASGI application.

Every HTTP request carries the agent's bearer token and is authenticated on its own, exactly as
the agent API does it (a revoked token is refused on its next request). The MCP transport runs
stateless with JSON answers: any worker process can serve any request, so the deployment scales
with `uvicorn --workers N` without sticky sessions.
"""

import json

import anyio.to_thread
from django.conf import settings
from django.http.request import split_domain_port, validate_host
from mcp.server.transport_security import TransportSecuritySettings

from memory.api.auth import agent_token_for_bearer
from memory.mcp.server import SCOPE_KEY, MemoryServer, db_work

MOUNT = "/mcp"
UNAUTHORIZED = "a valid agent token is required: Authorization: Bearer <token>"


async def _answer(send, status, detail, headers=()):
    body = json.dumps({"detail": detail}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *headers],
        }
    )
    await send({"type": "http.response.body", "body": body})


class AgentBearerAuth:
    """Refuses a request without a live agent token; hands the token to the MCP tools otherwise."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = dict(scope.get("headers") or [])
        host = headers.get(b"host", b"").decode("latin-1")
        domain, _ = split_domain_port(host)
        # The same host rule Django applies to every other URL of the deployment.
        if not domain or not validate_host(domain, settings.ALLOWED_HOSTS):
            return await _answer(send, 400, f"host {host!r} is not in ALLOWED_HOSTS")
        authorization = headers.get(b"authorization", b"").decode("latin-1")
        scheme, _, raw = authorization.partition(" ")
        token = None
        if scheme.lower() == "bearer" and raw.strip():
            token = await anyio.to_thread.run_sync(db_work(agent_token_for_bearer), raw.strip())
        if token is None:
            return await _answer(send, 401, UNAUTHORIZED, [(b"www-authenticate", b"Bearer")])
        await self.app({**scope, SCOPE_KEY: token}, receive, send)


def mcp_http_app():
    """A fresh ASGI app of the MCP endpoint (its session manager runs once, in the app's lifespan)."""
    server = MemoryServer()
    app = server.streamable_http_app(
        streamable_http_path=MOUNT + "/",
        stateless_http=True,
        json_response=True,
        max_request_body_size=settings.API_MAX_BODY_BYTES,
        # Hosts are checked against ALLOWED_HOSTS above, and a page in a browser holds no agent token.
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    return AgentBearerAuth(app)


def asgi_router(*, django_app, mcp_app):
    """/mcp and /mcp/ go to the MCP endpoint, everything else to Django; lifespan events to MCP."""

    async def route(scope, receive, send):
        if scope["type"] == "lifespan":
            return await mcp_app(scope, receive, send)
        path = scope.get("path", "")
        if path == MOUNT or path == MOUNT + "/":
            return await mcp_app({**scope, "path": MOUNT + "/"}, receive, send)
        return await django_app(scope, receive, send)

    return route
