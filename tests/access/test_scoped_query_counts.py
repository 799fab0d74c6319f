"""Scoping costs a constant number of queries: a team member's list pages make at most one query
more than a site-wide viewer's (their memberships, read once per request; a page offering approver
buttons reads them for a site-wide viewer too, who may approve in a team), however many teams,
memories and rows of other teams there are."""

import pytest
from django.contrib.auth.models import Group
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from memory.models import PipelineRun, RefinementRun
from memory.roles import ensure_role_groups
from personas.models import Membership, Team
from tests.factories import MemoryFactory, PersonaFactory, ProjectFactory, make_lesson

pytestmark = pytest.mark.django_db

LIST_PAGES = ["/", "/promotions/", "/compactions/", "/refinement/", "/pipeline/", "/llm/"]


def _team(label, memories=2):
    team = Team.objects.create(name=label, slug=label.lower())
    for i in range(memories):
        memory = MemoryFactory(
            persona=PersonaFactory(name=f"{label}-persona-{i}", team=team),
            project=ProjectFactory(slug=f"{label.lower()}-{i}", team=team),
        )
        make_lesson(memory, f"A lesson of {label} {i}")
        now = timezone.now()
        RefinementRun.objects.create(
            memory=memory, status=RefinementRun.Status.COMPLETED, started_at=now, finished_at=now
        )
        PipelineRun.objects.create(memory=memory, status=PipelineRun.Status.COMPLETED)
    return team


def _queries(client, user, url):
    client.force_login(user)
    with CaptureQueriesContext(connection) as ctx:
        assert client.get(url).status_code == 200
    return len(ctx.captured_queries)


@pytest.mark.parametrize("url", LIST_PAGES)
def test_team_scoping_adds_one_query_whatever_the_organisation(url, client, django_user_model):
    ensure_role_groups()
    own = _team("Own")
    site = django_user_model.objects.create_user("site-viewer")
    site.groups.add(Group.objects.get(name="viewer"))
    member = django_user_model.objects.create_user("member")
    Membership.objects.create(team=own, user=member, role="viewer")
    site_wide, scoped = _queries(client, site, url), _queries(client, member, url)
    assert scoped - site_wide in (0, 1), f"{url}: {scoped} queries for a team member, {site_wide} site-wide"
    for n in range(3):  # three more teams, with more memories, and the member in one more of them
        _team(f"Other{n}", memories=3)
    Membership.objects.create(team=Team.objects.get(slug="other0"), user=member, role="curator")
    assert _queries(client, member, url) == scoped, url
