"""The permission matrix: every URL pattern of the project × every kind of person × GET and POST.

The patterns are walked from the URLconf, so a view added without a row here fails
`test_every_url_pattern_has_a_row` with the pattern's name. A row says which role the URL needs
(VIEW, CURATE, APPROVE on the memory's team; PERSONA: approver of the persona's own team) and how to
build its address from the objects of the owning team. The expectations are the rules of
memory.access, the same for every row:

- anonymous: sent to the login page (or 405 for a POST-only URL), nothing written;
- a role of another team: 404 for the owning team's object (403 if they hold the needed role in no
  team at all), and a list page never shows the owning team's memory; nothing written;
- a role of the owning team below what the URL needs: 403 for a write, nothing written;
- the needed role in the owning team, site-wide, or a superuser: allowed (not 403/404/500).

To add a URL: one row in ROWS. Run on PostgreSQL in CI with DATABASE_URL set (same test).
"""

from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, timedelta

import pytest
from django.contrib.auth.models import Group
from django.db import connection
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from django.utils import timezone

from memory import services
from memory.models import (
    Change,
    ChangeBatch,
    CompactionProposal,
    ExpiryProposal,
    Interaction,
    Lesson,
    LessonConflict,
    LessonRef,
    PipelineRun,
    PromotionCandidate,
    ProposalLine,
    RefinementPromptVersion,
    RefinementRun,
)
from memory.roles import ensure_role_groups
from memory.sync.models import SyncConflict, SyncedFolder
from personas.models import Membership, Persona, Team
from tests.factories import MemoryFactory, PersonaFactory, ProjectFactory, make_lesson

pytestmark = pytest.mark.django_db(transaction=False)

VIEW, CURATE, APPROVE, PERSONA = "view", "curate", "approve", "persona"
RANK = {"viewer": 1, "curator": 2, "approver": 3}
NEEDS = {VIEW: 1, CURATE: 2, APPROVE: 3, PERSONA: 3}


@dataclass
class Row:
    needs: str  # VIEW, CURATE, APPROVE or PERSONA
    args: Callable  # objects of the owning team -> kwargs for reverse()
    list_page: bool = False  # a page of many objects: other teams get 200 without the owner's rows


def _m(o):
    return {"memory_id": o["memory"].pk}


ROWS = {
    "home": Row(VIEW, lambda o: {}, list_page=True),
    "memory_detail": Row(VIEW, _m),
    "memory_history": Row(VIEW, _m),
    "prompt_preview": Row(VIEW, _m),
    "lesson_row": Row(VIEW, lambda o: {"lesson_id": o["lesson"].pk}),
    "lesson_edit": Row(CURATE, lambda o: {"lesson_id": o["lesson"].pk}),
    "lesson_protect": Row(CURATE, lambda o: {"lesson_id": o["lesson"].pk}),
    "lesson_delete": Row(CURATE, lambda o: {"lesson_id": o["lesson"].pk}),
    "lesson_restore": Row(CURATE, lambda o: {"lesson_id": o["lesson"].pk}),
    "lesson_history": Row(VIEW, lambda o: {"lesson_id": o["lesson"].pk}),
    "interaction_detail": Row(VIEW, lambda o: {"interaction_id": o["interaction"].pk}),
    "change_revert": Row(CURATE, lambda o: {"change_id": o["change"].pk}),
    "batch_revert": Row(CURATE, lambda o: {"batch_id": o["batch"].pk}),
    "promotions:inbox": Row(VIEW, lambda o: {}, list_page=True),
    "promotions:detect": Row(APPROVE, lambda o: {}, list_page=True),
    "promotions:detail": Row(VIEW, lambda o: {"pk": o["candidate"].pk}),
    "promotions:approve": Row(APPROVE, lambda o: {"pk": o["candidate"].pk}),
    "promotions:reject": Row(APPROVE, lambda o: {"pk": o["candidate"].pk}),
    "compaction-list": Row(VIEW, lambda o: {}, list_page=True),
    "compaction-detail": Row(VIEW, lambda o: {"pk": o["proposal"].pk}),
    "compaction-apply": Row(APPROVE, lambda o: {"pk": o["proposal"].pk}),
    "compaction-reject": Row(APPROVE, lambda o: {"pk": o["proposal"].pk}),
    "compaction-revert": Row(APPROVE, lambda o: {"pk": o["proposal"].pk}),
    "compaction-recompute": Row(APPROVE, lambda o: {"pk": o["proposal"].pk}),
    "compaction-line-edit": Row(APPROVE, lambda o: {"pk": o["proposal"].pk, "line_pk": o["line"].pk}),
    "compaction-propose": Row(APPROVE, lambda o: {"memory_pk": o["memory"].pk}),
    "refinement:runs": Row(VIEW, lambda o: {}, list_page=True),
    "refinement:run": Row(VIEW, lambda o: {"pk": o["refinement_run"].pk}),
    "refinement:run-revert": Row(APPROVE, lambda o: {"pk": o["refinement_run"].pk}),
    "refinement:run-looked-at": Row(APPROVE, lambda o: {"pk": o["refinement_run"].pk}),
    "refinement:run-start": Row(APPROVE, lambda o: {"memory_pk": o["memory"].pk}),
    "refinement:prompt": Row(PERSONA, lambda o: {"persona_pk": o["persona"].pk}),
    "refinement:threshold": Row(PERSONA, lambda o: {"persona_pk": o["persona"].pk}),
    "refinement:prompt-preview": Row(PERSONA, lambda o: {"persona_pk": o["persona"].pk}),
    "refinement:prompt-restore": Row(
        PERSONA, lambda o: {"persona_pk": o["persona"].pk, "version_pk": o["prompt_version"].pk}
    ),
    "llm:calls": Row(VIEW, lambda o: {}, list_page=True),
    "pipeline:runs": Row(VIEW, lambda o: {}, list_page=True),
    "pipeline:run": Row(VIEW, lambda o: {"pk": o["pipeline_run"].pk}),
    "pipeline:run-looked-at": Row(APPROVE, lambda o: {"pk": o["pipeline_run"].pk}),
    "pipeline:run-start": Row(APPROVE, lambda o: {"memory_pk": o["memory"].pk}),
    "refs_check": Row(CURATE, _m),
    "refs_accept_moved": Row(CURATE, _m),
    "ref_accept": Row(CURATE, lambda o: {"ref_id": o["ref"].pk}),
    "ref_drop": Row(CURATE, lambda o: {"ref_id": o["ref"].pk}),
    "ref_retire": Row(CURATE, lambda o: {"ref_id": o["ref"].pk}),
    "refs_bulk": Row(CURATE, _m),
    "promotions:bulk": Row(APPROVE, lambda o: {}, list_page=True),
    "promotions:supporting": Row(VIEW, lambda o: {"pk": o["candidate"].pk}),
    "compaction-bulk-reject": Row(APPROVE, lambda o: {}, list_page=True),
    "sync-conflicts": Row(VIEW, lambda o: {}, list_page=True),
    "sync-conflict": Row(VIEW, lambda o: {"conflict_id": o["conflict"].pk}),
    "sync-conflict-resolve": Row(CURATE, lambda o: {"conflict_id": o["conflict"].pk}),
    "search": Row(VIEW, lambda o: {}, list_page=True),
    "conflicts:inbox": Row(VIEW, lambda o: {}, list_page=True),
    "conflicts:bulk": Row(APPROVE, lambda o: {}, list_page=True),
    "conflicts:detect": Row(APPROVE, lambda o: {}, list_page=True),
    "conflicts:detail": Row(VIEW, lambda o: {"pk": o["lesson_conflict"].pk}),
    "conflicts:decide": Row(APPROVE, lambda o: {"pk": o["lesson_conflict"].pk}),
    "conflicts:reopen": Row(APPROVE, lambda o: {"pk": o["lesson_conflict"].pk}),
    "conflicts:expiries": Row(VIEW, lambda o: {}, list_page=True),
    "conflicts:expiries-bulk": Row(APPROVE, lambda o: {}, list_page=True),
    "conflicts:expiry-decide": Row(APPROVE, lambda o: {"pk": o["expiry_proposal"].pk}),
    "conflicts:expired-restore": Row(APPROVE, lambda o: {"lesson_id": o["expired_lesson"].pk}),
    "conflicts:expired-retire": Row(APPROVE, lambda o: {"lesson_id": o["expired_lesson"].pk}),
}

# Patterns outside the team rules, each with the reason and the tests that cover it.
NOT_TEAM_SCOPED = {
    None: "favicon redirect, no data",
    "login": "the login page",
    "logout": "ends the session",
    "account": "the signed-in person's own settings (tests/digest/test_view_account.py)",
    # The agent API answers to agent tokens only, scoped to their persona (tests/api/test_auth.py);
    # a session, even a superuser's, reads nothing there (test_api_ignores_sessions below).
    "memory-context-text": "agent token",
    "api-v1:openapi-json": "API schema, no data",
    "api-v1:openapi-view": "API docs, no data",
    "api-v1:health": "liveness, no data",
    "api-v1:memory_context": "agent token",
    "api-v1:memory_prompt": "agent token",
    "api-v1:interaction_submit": "agent token",
    "api-v1:interaction_status": "agent token",
    "api-v1:lessons_append": "agent token",
    "api-v1:lessons_list": "agent token",
    "api-v1:lesson_recall": "agent token",
    "api-v1:lesson_expiry_set": "agent token",
    "api-v1:api-root": "API index, no data",
    # Single sign-on: pages of the sign-in itself (test_sso_pages_for_every_person below, tests/sso/).
    "login_local": "the break-glass password login (superusers only with LOCAL_LOGIN=off: tests/sso/test_recheck.py)",
    "oidc_authentication_init": "sends the browser to the identity provider; 404 without OIDC",
    "oidc_authentication_callback": "the provider's answer, checked by state, nonce and PKCE; 404 without OIDC",
    "sso_no_access": "the signed-in person's own how-to-get-access page, no team data",
    # SCIM answers to its bearer token only; a session, even a superuser's, gets 401 (test_scim_accepts_only_its_token).
    "scim_root": "SCIM bearer token",
    "scim": "SCIM bearer token",
}


def _walk(patterns, prefix="", namespace=None):
    for p in patterns:
        if isinstance(p, URLResolver):
            ns = p.namespace if not namespace else (f"{namespace}:{p.namespace}" if p.namespace else namespace)
            yield from _walk(p.url_patterns, prefix + str(p.pattern), ns)
        elif isinstance(p, URLPattern):
            name = f"{namespace}:{p.name}" if namespace and p.name else p.name
            yield prefix + str(p.pattern), name


def project_patterns():
    """(route, name) of every URL pattern outside the admin (the admin has its own matrix below)."""
    return [(route, name) for route, name in _walk(get_resolver().url_patterns) if not route.startswith("admin/")]


def test_every_url_pattern_has_a_row():
    missing = [
        f"{name or '(unnamed)'} at /{route}"
        for route, name in project_patterns()
        if name not in ROWS and name not in NOT_TEAM_SCOPED
    ]
    assert not missing, (
        "URL patterns with no row in the permission matrix (tests/access/test_permission_matrix.py ROWS): "
        + "; ".join(missing)
        + ". Scope the view through memory.access and add a row saying the role it needs."
    )


# --- the people and the objects ---------------------------------------------------------------

PEOPLE = [
    "anonymous",
    "own-viewer",
    "own-curator",
    "own-approver",
    "other-viewer",
    "other-curator",
    "other-approver",
    "site-viewer",
    "site-curator",
    "site-approver",
    "superuser",
]


def _team_world(label):
    team = Team.objects.create(name=f"Team {label}", slug=f"team-{label}")
    persona = PersonaFactory(name=f"Persona-{label}", team=team)
    project = ProjectFactory(slug=f"project-{label}", name=f"Project {label}", team=team)
    memory = MemoryFactory(persona=persona, project=project)
    lesson = make_lesson(memory, f"Secret of team {label} in src/app.py", refs="src/app.py#L1-L2")
    notes = [make_lesson(memory, f"Working note {i} of {label}") for i in range(3)]
    change = Change.objects.filter(lesson=lesson).select_related("batch").first()
    interaction = Interaction.objects.create(memory=memory, trigger_type="manual", outcome="ok", summary="s")
    candidate = PromotionCandidate.objects.create(
        memory=memory, text=f"Core of {label}", category="PATTERN", evidence={}, fingerprint=label, engine="offline"
    )
    candidate.supporting.add(lesson)
    proposal = CompactionProposal.objects.create(
        memory=memory,
        base_version=memory.version,
        engine="offline",
        target_lines=2,
        before_text="",
        input_lesson_ids=[lesson.pk],
    )
    line = ProposalLine.objects.create(
        proposal=proposal, position=1, category="OBSERVATION", text="x", source_ids=[lesson.pk], kind="kept"
    )
    now = timezone.now()
    refinement_run = RefinementRun.objects.create(
        memory=memory, status=RefinementRun.Status.TERMINATED, started_at=now, finished_at=now
    )
    pipeline_run = PipelineRun.objects.create(memory=memory, status=PipelineRun.Status.FAILED)
    prompt_version = RefinementPromptVersion.objects.create(persona=persona, number=1, text="Be careful.")
    folder = SyncedFolder.objects.create(
        root="/agents", folder=f"Persona-{label}/memories/project-{label}", memory=memory
    )
    conflict = SyncConflict.objects.create(
        memory=memory,
        folder=folder,
        lesson=lesson,
        file_name="working.md",
        base_line=f"- [OBSERVATION] Secret of team {label}",
        file_line=f"- [OBSERVATION] Night Watch's secret of team {label}",
    )
    lesson_conflict = LessonConflict.objects.create(
        memory=memory, older=notes[0], newer=notes[1], relation="contradicts", evidence="3 vs 5", fingerprint=label
    )
    expiry_proposal = ExpiryProposal.objects.create(
        memory=memory, lesson=notes[2], expires_on=date(2027, 1, 1), evidence="until 2027-01-01"
    )
    expired_lesson = services.lesson_set_expiry(
        lesson=make_lesson(memory, f"Expired note of {label}"),
        expires_on=timezone.localdate() - timedelta(days=1),
        actor=services.Actor.system("tests"),
    )
    return {
        "expiry_proposal": expiry_proposal,
        "expired_lesson": expired_lesson,
        "lesson_conflict": lesson_conflict,
        "team": team,
        "persona": persona,
        "project": project,
        "memory": memory,
        "lesson": lesson,
        "change": change,
        "batch": change.batch,
        "interaction": interaction,
        "candidate": candidate,
        "proposal": proposal,
        "line": line,
        "refinement_run": refinement_run,
        "pipeline_run": pipeline_run,
        "prompt_version": prompt_version,
        "ref": LessonRef.objects.get(lesson=lesson),
        "conflict": conflict,
    }


@pytest.fixture
def world(django_user_model):
    ensure_role_groups()
    own, other = _team_world("alpha"), _team_world("beta")
    users = {"anonymous": None}
    for role in RANK:
        for label, team in (("own", own["team"]), ("other", other["team"])):
            user = django_user_model.objects.create_user(f"{label}-{role}")
            Membership.objects.create(team=team, user=user, role=role)
            users[f"{label}-{role}"] = user
        site = django_user_model.objects.create_user(f"site-{role}")
        site.groups.add(Group.objects.get(name=role))
        users[f"site-{role}"] = site
    users["superuser"] = django_user_model.objects.create_superuser("root", password=None)
    return own, other, users


def _fingerprint():
    """What any write of these views would change, read straight from the tables."""
    return (
        list(Lesson.objects.order_by("id").values_list("id", "status", "protected", "text", "expires_on")),
        list(ExpiryProposal.objects.order_by("id").values_list("id", "status")),
        Change.objects.count(),
        ChangeBatch.objects.count(),
        list(PromotionCandidate.objects.order_by("id").values_list("id", "status")),
        list(CompactionProposal.objects.order_by("id").values_list("id", "status")),
        list(ProposalLine.objects.order_by("id").values_list("id", "text")),
        list(RefinementRun.objects.order_by("id").values_list("id", "status", "looked_at")),
        list(PipelineRun.objects.order_by("id").values_list("id", "status", "looked_at")),
        list(Persona.objects.order_by("id").values_list("id", "refinement_prompt", "refinement_threshold")),
        RefinementPromptVersion.objects.count(),
        list(LessonRef.objects.order_by("id").values_list("id", "path")),
        list(SyncConflict.objects.order_by("id").values_list("id", "status")),
    )


POST_DATA = {
    "reason": "matrix",
    "choice": "both",
    "action": "drop",
    "text": "Edited by the matrix",
    "category": "PATTERN",
    "relevance": "high",
    "refs": "",
    "threshold": "50",
    "protected": "1",
}


def _expected(row, person, method):
    """('allowed' | 'denied' | 'hidden' | 'login'), from the rules in the module docstring."""
    if person == "anonymous":
        return "login"
    if person == "superuser":
        return "allowed"
    scope, role = person.split("-")
    held = RANK[role]
    if scope in ("own", "site"):
        return "allowed" if held >= NEEDS[row.needs] else "denied"
    # another team's person
    if row.list_page:
        return "allowed-without-owner" if held >= NEEDS[row.needs] else "denied"
    return "hidden" if held >= NEEDS[row.needs] else "denied-or-hidden"


@pytest.mark.parametrize("name", sorted(ROWS))
def test_matrix(name, world, client):
    own, _other, users = world
    row = ROWS[name]
    url = reverse(name, kwargs=row.args(own))
    secret = own["persona"].name
    order = sorted(PEOPLE, key=lambda p: _expected(row, p, "POST") in ("allowed",))  # writes that may succeed last
    failures = []
    consumed = False  # an allowed write may remove its object (a dropped ref): later ones then find nothing
    for person in order:
        client.logout()
        if users[person] is not None:
            client.force_login(users[person])
        for method in ("GET", "POST"):
            expected = _expected(row, person, method)
            before = _fingerprint()
            response = client.get(url) if method == "GET" else client.post(url, POST_DATA)
            status = response.status_code
            changed = _fingerprint() != before
            ok = {
                "login": status in (302, 405) and (status == 405 or "/accounts/login/" in response["Location"]),
                "denied": status in (403, 405),
                "hidden": status in (404, 405),
                "denied-or-hidden": status in (403, 404, 405),
                "allowed": status not in (403, 500) and (status != 404 or consumed),
                "allowed-without-owner": status not in (404, 500) and secret not in response.content.decode(),
            }[expected]
            if expected != "allowed" and changed:
                ok = False
            consumed = consumed or (expected == "allowed" and changed)
            if not ok:
                failures.append(
                    f"{method} {url} as {person}: expected {expected}, got {status}"
                    f"{' and the database changed' if changed else ''}"
                )
    assert not failures, "\n".join(failures)


def test_api_ignores_sessions(world, client):
    """A signed-in person, even a superuser, reads nothing from the agent API without a token."""
    own, _, users = world
    client.force_login(users["superuser"])
    memory = own["memory"]
    for path in (
        f"/api/v1/memory/{memory.persona.name}/{memory.project.slug}/context",
        f"/api/v1/memory/{memory.persona.name}/{memory.project.slug}/lessons",
        f"/api/v1/lessons/{own['lesson'].pk}",
    ):
        assert client.get(path).status_code == 401, path
    expiry = f"/api/v1/lessons/{own['lesson'].pk}/expiry"
    assert client.put(expiry, {"expires_on": "2027-01-01"}, content_type="application/json").status_code == 401
    assert Lesson.objects.get(pk=own["lesson"].pk).expires_on is None


def test_matrix_runs_on_the_configured_database():
    # make test runs this module on SQLite; CI runs it again with DATABASE_URL pointing at PostgreSQL.
    assert connection.vendor in ("sqlite", "postgresql")


def test_sso_pages_for_every_person(world, client):
    """Without OIDC configured the provider's start and callback do not exist for anyone; the no-access page
    needs a session and shows no team's data; the break-glass login opens for anyone."""
    own, _, users = world
    secret = own["persona"].name
    for person in PEOPLE:
        client.logout()
        if users[person] is not None:
            client.force_login(users[person])
        assert client.get(reverse("oidc_authentication_init")).status_code == 404, person
        assert client.get(reverse("oidc_authentication_callback") + "?code=x&state=y").status_code == 404, person
        assert client.get(reverse("login_local")).status_code == 200, person
        response = client.get(reverse("sso_no_access"))
        if person == "anonymous":
            assert response.status_code == 302 and "/accounts/login/" in response["Location"]
        else:
            assert response.status_code == 200 and secret not in response.content.decode(), person


def test_scim_accepts_only_its_token(world, client):
    """Every person's session, with any method, gets 401 from every SCIM endpoint; an agent token too;
    only a SCIM token is let in."""
    from memory.sso.services import scim_token_create
    from memory.tokens import agent_token_create

    own, _, users = world
    _, scim_raw = scim_token_create(name="matrix")
    _, agent_raw = agent_token_create(persona=own["persona"], project=None, name="agent")
    paths = ["/scim/v2/", "/scim/v2/Users", "/scim/v2/Groups", "/scim/v2/ServiceProviderConfig", "/scim/v2/Schemas"]
    users_before = users["superuser"].__class__.objects.count()
    for person in PEOPLE:
        client.logout()
        if users[person] is not None:
            client.force_login(users[person])
        for path in paths:
            for method in ("get", "post"):
                for headers in ({}, {"HTTP_AUTHORIZATION": f"Bearer {agent_raw}"}):
                    if method == "get":
                        response = client.get(path, **headers)
                    else:
                        response = client.post(path, data="{}", content_type="application/scim+json", **headers)
                    assert response.status_code == 401, f"{method.upper()} {path} as {person} {headers}"
    assert users["superuser"].__class__.objects.count() == users_before
    client.logout()
    ok = client.get("/scim/v2/Users", HTTP_AUTHORIZATION=f"Bearer {scim_raw}")
    assert ok.status_code == 200
