"""Agent tokens: creation, hashing, and the scope matrix over every endpoint."""

import hashlib
import re
import uuid
from io import StringIO

import pytest
import time_machine
from django.core.management import CommandError, call_command
from django.urls import URLPattern, URLResolver, get_resolver
from django.utils import timezone

from memory.models import AgentToken, Change, Interaction, Lesson, Memory
from memory.tokens import agent_token_authenticate, agent_token_revoke
from tests.api.conftest import AgentClient, memory_url
from tests.factories import MemoryFactory, make_lesson


def test_command_prints_the_token_once_and_stores_only_its_hash(persona, project):
    out, err = StringIO(), StringIO()
    call_command(
        "create_agent_token",
        "--persona",
        persona.name.upper(),
        "--project",
        project.slug,
        "--name",
        "ci bot",
        stdout=out,
        stderr=err,
    )
    raw = out.getvalue().strip()
    token = AgentToken.objects.get()
    assert token.persona == persona and token.project == project and token.name == "ci bot"
    assert token.token_hash == hashlib.sha256(raw.encode()).hexdigest()
    assert raw.startswith(token.prefix) and len(token.prefix) == 12
    assert raw not in str(list(AgentToken.objects.values()))
    assert "shown only once" in err.getvalue()
    assert agent_token_authenticate(raw).model == token


def test_command_refuses_unknown_persona_or_project(persona):
    with pytest.raises(CommandError, match="no active persona"):
        call_command("create_agent_token", "--persona", "Nobody", stdout=StringIO(), stderr=StringIO())
    with pytest.raises(CommandError, match="no project"):
        call_command(
            "create_agent_token", "--persona", persona.name, "--project", "nope", stdout=StringIO(), stderr=StringIO()
        )
    assert not AgentToken.objects.exists()


READS = ["context", "context?format=json", "prompt", "lessons"]


@pytest.mark.parametrize("tail", READS)
def test_missing_wrong_or_revoked_token_is_401(client, make_agent, persona, project, memory, tail):
    url = memory_url(persona, project, tail)
    assert client.get(url).status_code == 401
    assert AgentClient(client, "nwm_not-a-real-token").get(url).status_code == 401
    response = AgentClient(client, "garbage").get(url)
    assert response.status_code == 401 and response["WWW-Authenticate"] == "Bearer"
    agent, token = make_agent(persona)
    assert agent.get(url).status_code == 200
    agent_token_revoke(token=token)
    assert agent.get(url).json()["detail"].startswith("a valid agent token")


def test_token_of_archived_persona_is_refused(make_agent, persona, project, memory):
    agent, _ = make_agent(persona)
    assert agent.get(memory_url(persona, project, "context")).status_code == 200  # its scope is now cached
    persona.archived_at = timezone.now()
    persona.save()
    assert agent.get(memory_url(persona, project, "context")).status_code == 401


def test_a_token_revoked_in_the_admin_is_refused_at_once(make_agent, persona, project, memory):
    agent, token = make_agent(persona)
    url = memory_url(persona, project, "context")
    assert agent.get(url).status_code == 200
    token.revoked_at = timezone.now()
    token.save()
    assert agent.get(url).status_code == 401


def test_a_cached_scope_lasts_only_seconds(make_agent, persona, project, memory, settings):
    # Revoked behind the application's back (another tool writing the table): refused once the
    # cached scope expires, after AGENT_TOKEN_CACHE_SECONDS.
    settings.AGENT_TOKEN_CACHE_SECONDS = 5
    agent, token = make_agent(persona)
    url = memory_url(persona, project, "context")
    with time_machine.travel(timezone.now(), tick=False) as clock:
        assert agent.get(url).status_code == 200
        AgentToken.objects.filter(pk=token.pk).update(revoked_at=timezone.now())
        assert agent.get(url).status_code == 200
        clock.shift(6)
        assert agent.get(url).status_code == 401


def _write_bodies():
    return {
        "interactions": {"trigger_type": "pr_review", "summary": "Reviewed the login flow in auth/login.py"},
        "lessons": {"lessons": [{"tool": "log_learning", "text": "auth/login.py re-reads the session twice"}]},
    }


def _counts():
    return (Lesson.objects.count(), Interaction.objects.count(), Change.objects.count(), Memory.objects.count())


@pytest.mark.parametrize("tail", [*READS, "interactions", "lessons-post"])
def test_scope_matrix(make_agent, persona, project, other_persona, other_project, memory, other_memory, tail):
    """own memory: allowed; other persona: 403; other project on a scoped token: 403; unknown: 404."""
    unscoped, _ = make_agent(persona)
    scoped, _ = make_agent(persona, project)
    MemoryFactory(persona=persona, project=other_project)
    make_lesson(other_memory, "Maya's lesson about auth/session.py")

    def call(agent, p_name, slug):
        if tail in ("interactions", "lessons-post"):
            name = "interactions" if tail == "interactions" else "lessons"
            return agent.post(f"/api/v1/memory/{p_name}/{slug}/{name}", _write_bodies()[name])
        return agent.get(f"/api/v1/memory/{p_name}/{slug}/{tail}")

    ok = 202 if tail == "interactions" else 201 if tail == "lessons-post" else 200
    assert call(unscoped, persona.name, project.slug).status_code == ok
    assert call(unscoped, persona.name.lower(), other_project.slug).status_code == ok
    assert call(scoped, persona.name, project.slug).status_code == ok
    before = _counts()
    denied = [
        (unscoped, other_persona.name, project.slug, 403),
        (scoped, persona.name, other_project.slug, 403),
        (scoped, other_persona.name, project.slug, 403),
        (unscoped, "Nobody", project.slug, 404),
        (unscoped, persona.name, "no-such-project", 404),
        (scoped, persona.name, "no-such-project", 404),
    ]
    for agent, p_name, slug, status in denied:
        response = call(agent, p_name, slug)
        assert response.status_code == status, (p_name, slug, response.content)
        assert response.json()["detail"]
    assert _counts() == before


def test_recall_and_interaction_status_respect_scope(make_agent, persona, project, other_project, other_memory):
    unscoped, _ = make_agent(persona)
    scoped, _ = make_agent(persona, project)
    theirs = make_lesson(other_memory, "Maya's lesson about auth/session.py")
    mine_elsewhere = make_lesson(MemoryFactory(persona=persona, project=other_project), "Other project cfg.py")
    assert unscoped.get(f"/api/v1/lessons/{theirs.pk}").status_code == 403
    assert unscoped.get(f"/api/v1/lessons/{mine_elsewhere.pk}").status_code == 200
    assert scoped.get(f"/api/v1/lessons/{mine_elsewhere.pk}").status_code == 403
    interaction = Interaction.objects.create(memory=other_memory, trigger_type="t", summary="s")
    assert unscoped.get(f"/api/v1/interactions/{interaction.pk}").status_code == 403


_PARAM = re.compile(r"<(?:(?P<converter>\w+):)?(?P<name>\w+)>")


def _dashboard_urls(values, resolver=None, prefix=""):
    """Every URL outside the API, with its parameters filled from `values` (by converter)."""
    resolver = resolver or get_resolver()
    for entry in resolver.url_patterns:
        route = prefix + str(entry.pattern)
        if route.startswith("api/"):
            continue
        if isinstance(entry, URLResolver):
            yield from _dashboard_urls(values, entry, route)
        elif isinstance(entry, URLPattern) and "^" not in route and "(?P" not in route:
            yield "/" + _PARAM.sub(lambda m: str(values.get(m["converter"] or "str")), route).rstrip("$")


def test_agent_tokens_open_no_dashboard_or_admin_door(client, make_agent, persona, project, memory):
    """Bearer tokens are not sessions: every page and form outside the API treats the agent as anonymous."""
    agent, _ = make_agent(persona)
    lesson = make_lesson(memory, "Protected by people only: settings.py")
    values = {"int": lesson.pk, "slug": project.slug, "str": project.slug, "path": "src/app.py", "uuid": uuid.uuid4()}
    urls = set(_dashboard_urls(values)) | {
        "/admin/memory/lesson/",
        f"/admin/memory/lesson/{lesson.pk}/change/",
        f"/admin/memory/lesson/{lesson.pk}/delete/",
        f"/admin/personas/persona/{persona.pk}/change/",
    }
    before = _counts()
    checked = 0
    for url in sorted(urls):
        if "login" in url or "logout" in url or url == "/favicon.ico":  # the sign-in forms, the site's icon
            continue
        for method in (agent.get, agent.post):
            response = method(url)
            checked += 1
            assert response.status_code in (301, 302, 401, 403, 404, 405), (url, response.status_code)
            if response.status_code in (301, 302):
                assert "login" in response["Location"], (url, response["Location"])
    assert checked >= 8
    assert _counts() == before
    persona.refresh_from_db()
    assert persona.refinement_prompt == "" and persona.reflection_prompt == ""


def test_revoke_command_and_last_use(make_agent, persona, project, memory):
    agent, token = make_agent(persona)
    url = memory_url(persona, project, "context")
    assert agent.get(url).status_code == 200
    token.refresh_from_db()
    assert token.last_used_at is not None
    out = StringIO()
    call_command("revoke_agent_token", token.prefix, stdout=out)
    assert "Revoked" in out.getvalue()
    assert agent.get(url).status_code == 401
    with pytest.raises(CommandError, match="no live token"):
        call_command("revoke_agent_token", token.prefix, stdout=StringIO())
