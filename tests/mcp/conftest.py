"""Drive the MCP server with the SDK's own client, over stdio and over streamable HTTP.

stdio: `manage.py mcp_serve` runs as a subprocess on the test database. PostgreSQL is shared
directly; the in-memory SQLite test database is copied to a file for the subprocess and copied
back when the session ends, so the assertions after a session see what the server wrote.

HTTP: `nightwatch.asgi` (Django plus /mcp/) served by uvicorn in a thread of the test process,
on 127.0.0.1 and a random port, against the same test database.

Tests write the client side as `async def steps(client): ...` and run it with `transport.run`;
everything that touches the ORM happens outside it, in the test itself.
"""

import concurrent.futures
import contextlib
import os
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path
from urllib.parse import quote

import anyio
import anyio.to_thread
import pytest
from django.db import connection

from memory.bench.serving import pick_port
from memory.tokens import agent_token_create, agent_token_revoke

ROOT = Path(__file__).resolve().parents[2]


def wait_for(predicate, *, timeout, message):
    pause = threading.Event()
    for _ in range(int(timeout / 0.05)):
        if predicate():
            return
        pause.wait(0.05)
    pytest.fail(f"timed out after {timeout}s waiting for {message}")


def bearer_client(raw):
    from mcp.shared._httpx_utils import create_mcp_http_client

    return create_mcp_http_client(headers={"Authorization": f"Bearer {raw}"} if raw else {})


class HttpTransport:
    name = "http"

    def __init__(self, base_url):
        self.base_url = base_url
        self.url = base_url + "/mcp/"

    @contextlib.asynccontextmanager
    async def client(self, raw):
        from mcp import Client
        from mcp.client.streamable_http import streamable_http_client

        async with bearer_client(raw) as http:
            async with Client(streamable_http_client(self.url, http_client=http)) as client:
                yield client

    async def revoke(self, token):
        await anyio.to_thread.run_sync(lambda: _revoke(token))

    def run(self, raw, steps):
        return _run_client(self.client, raw, steps)


SESSION_SECONDS = 120


async def _bounded(open_client, raw, steps):
    with anyio.fail_after(SESSION_SECONDS):
        async with open_client(raw) as client:
            return await steps(client)


def _run_client(open_client, raw, steps):
    """Run a client session on its own event loop, in a thread: the test's thread may have one (Playwright)."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(anyio.run, _bounded, open_client, raw, steps).result()


def _revoke(token):
    from django.db import close_old_connections

    try:
        agent_token_revoke(token=token)
    finally:
        close_old_connections()


class StdioTransport:
    name = "stdio"

    def __init__(self, tmp_path):
        self.tmp_path = tmp_path
        self.sqlite_file = tmp_path / "mcp-stdio.sqlite3"
        self.errlog = tmp_path / "mcp-serve.stderr"
        self.on_sqlite = connection.vendor == "sqlite"

    def env(self, raw=None):
        env = {"DJANGO_SETTINGS_MODULE": "nightwatch.settings", "LOG_LEVEL": "warning"}
        if raw is not None:
            env["NWM_AGENT_TOKEN"] = raw
        if self.on_sqlite:
            env["SQLITE_PATH"] = str(self.sqlite_file)
        else:
            db = connection.settings_dict
            password = f":{quote(db['PASSWORD'], safe='')}" if db["PASSWORD"] else ""
            env["DATABASE_URL"] = (
                f"postgres://{quote(db['USER'], safe='')}{password}@{db['HOST'] or '127.0.0.1'}:"
                f"{db['PORT'] or 5432}/{db['NAME']}"
            )
            if os.environ.get("CACHE_URL"):
                env["CACHE_URL"] = os.environ["CACHE_URL"]
        return env

    def push(self):
        """Give the subprocess what the test wrote (SQLite only: PostgreSQL is shared)."""
        if self.on_sqlite:
            connection.ensure_connection()
            self.sqlite_file.unlink(missing_ok=True)
            with contextlib.closing(sqlite3.connect(self.sqlite_file)) as target:
                connection.connection.backup(target)

    def pull(self):
        """Bring back what the subprocess wrote."""
        if self.on_sqlite:
            with contextlib.closing(sqlite3.connect(self.sqlite_file)) as source:
                source.backup(connection.connection)

    @contextlib.asynccontextmanager
    async def client(self, raw):
        from mcp import Client, StdioServerParameters
        from mcp.client.stdio import stdio_client

        params = StdioServerParameters(
            command=sys.executable, args=[str(ROOT / "manage.py"), "mcp_serve"], cwd=str(ROOT), env=self.env(raw)
        )
        with open(self.errlog, "a") as errlog:
            async with Client(stdio_client(params, errlog=errlog)) as client:
                yield client

    async def revoke(self, token):
        """Revoke the way an operator does, with the command, while the server keeps running."""
        await anyio.run_process(
            [sys.executable, str(ROOT / "manage.py"), "revoke_agent_token", token.prefix],
            cwd=str(ROOT),
            env={**os.environ, **self.env()},
        )

    def run(self, raw, steps):
        self.push()
        try:
            return _run_client(self.client, raw, steps)
        finally:
            self.pull()

    def serve_command(self, raw=None, *args):
        """Run `mcp_serve` with nothing on stdin; returns the finished process (for refusals)."""
        self.push()
        env = {**os.environ, **self.env()}
        env.pop("NWM_AGENT_TOKEN", None)
        if raw is not None:
            env["NWM_AGENT_TOKEN"] = raw
        return subprocess.run(
            [sys.executable, str(ROOT / "manage.py"), "mcp_serve", *args],
            cwd=ROOT,
            env=env,
            input="",
            capture_output=True,
            text=True,
            timeout=120,
        )


@contextlib.contextmanager
def serve_http():
    """nightwatch.asgi served by uvicorn in a thread; yields the base URL."""
    import uvicorn

    from nightwatch.asgi import build_application

    # As the README advises for the ASGI server: no persistent connections, so the server's
    # worker threads leave none open on the test database.
    max_age = connection.settings_dict["CONN_MAX_AGE"]
    connection.settings_dict["CONN_MAX_AGE"] = 0
    port = pick_port()
    server = uvicorn.Server(
        uvicorn.Config(build_application(), host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    )
    thread = threading.Thread(target=server.run, name="mcp-uvicorn", daemon=True)
    thread.start()
    try:
        wait_for(lambda: server.started or not thread.is_alive(), timeout=30, message="uvicorn to start")
        if not server.started:
            pytest.fail("uvicorn stopped before serving")
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        connection.settings_dict["CONN_MAX_AGE"] = max_age


@pytest.fixture
def mcp_http(transactional_db):
    with serve_http() as base_url:
        yield HttpTransport(base_url)


@pytest.fixture
def mcp_stdio(transactional_db, tmp_path):
    return StdioTransport(tmp_path)


@pytest.fixture(params=["stdio", "http"])
def transport(request):
    """The same test over both transports."""
    return request.getfixturevalue(f"mcp_{request.param}")


@pytest.fixture
def make_token():
    """make_token(persona, project=None) -> (AgentToken, raw)."""

    def make(persona, project=None, name="mcp tests"):
        return agent_token_create(persona=persona, project=project, name=name)

    return make


def text_of(result):
    return "".join(getattr(block, "text", "") for block in result.content)
