"""python manage.py mcp_serve — the MCP server over stdio, for an agent running on this machine."""

import os
import sys

import anyio
from django.core.management.base import BaseCommand, CommandError

from memory.api.auth import agent_token_for_bearer
from memory.mcp.server import MemoryServer

TOKEN_ENV = "NWM_AGENT_TOKEN"


class Command(BaseCommand):
    help = (
        "Serve an agent's memory over MCP on stdin/stdout. The agent token comes from --token or "
        f"{TOKEN_ENV}; the server reaches only that token's persona (and project, when scoped)."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--token",
            default="",
            help=f"the agent token (default: ${TOKEN_ENV}; the variable keeps it out of the process list)",
        )

    def handle(self, *args, token, **options):
        raw = (token or os.environ.get(TOKEN_ENV, "")).strip()
        if not raw:
            raise CommandError(f"an agent token is required: --token nwm_… or {TOKEN_ENV}")
        agent = agent_token_for_bearer(raw)
        if agent is None:
            raise CommandError("this agent token is revoked or unknown; create one with manage.py create_agent_token")
        scope = f"project {agent.project_slug}" if agent.project_slug else "every project"
        # stdout carries the protocol; anything for people goes to stderr.
        print(f"Night Watch Memory MCP server on stdio for {agent.persona_name} ({scope}).", file=sys.stderr)
        anyio.run(MemoryServer(stdio_token=raw).run_stdio_async)
