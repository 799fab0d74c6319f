"""manage.py mcp_serve: the stdio server refuses to start without a live token."""

import pytest

from memory.tokens import agent_token_revoke

pytestmark = pytest.mark.django_db(transaction=True)


def test_refuses_to_start_without_a_live_token(mcp_stdio, make_token, persona, project):
    missing = mcp_stdio.serve_command(None)
    assert missing.returncode != 0 and "an agent token is required: --token nwm_… or NWM_AGENT_TOKEN" in missing.stderr
    token, raw = make_token(persona, project)
    agent_token_revoke(token=token)
    revoked = mcp_stdio.serve_command(None, "--token", raw)
    assert revoked.returncode != 0 and "this agent token is revoked or unknown" in revoked.stderr
    assert revoked.stdout == ""  # stdout belongs to the protocol


def test_announces_whose_memory_it_serves_on_stderr(mcp_stdio, make_token, persona, project):
    _, raw = make_token(persona, project)
    served = mcp_stdio.serve_command(raw)  # stdin is empty: the server starts, then sees the end of input
    assert f"MCP server on stdio for {persona.name} (project {project.slug})" in served.stderr
    assert served.stdout == ""
