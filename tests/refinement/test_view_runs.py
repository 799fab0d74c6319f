import pytest
from django.urls import reverse

from memory.models import RefinementRun
from memory.refinement.services import refinement_run_create
from tests.factories import MemoryFactory

from .helpers import core

pytestmark = pytest.mark.django_db
URL = reverse("refinement:runs")


def make_runs(n, status="completed"):
    for _ in range(n):
        memory = MemoryFactory()
        core(memory, "A core lesson <script>alert(1)</script>")
        run = refinement_run_create(memory=memory)
        RefinementRun.objects.filter(pk=run.pk).update(status=status)


def test_anonymous_is_sent_to_login(client):
    assert client.get(URL).status_code == 302


def test_user_without_role_gets_403(client, django_user_model):
    client.force_login(django_user_model.objects.create_user("nobody", password="x"))
    assert client.get(URL).status_code == 403


def test_viewer_sees_runs_but_no_run_now(client_for, viewer):
    make_runs(2)
    response = client_for(viewer).get(URL)
    assert response.status_code == 200
    assert b"Run now" not in response.content
    assert response.content.count(b'class="badge badge-completed"') == 2


def test_approver_sees_run_now(client_for, approver):
    make_runs(1)
    assert b"Run now" in client_for(approver).get(URL).content


def test_status_filter(client_for, viewer):
    make_runs(2, "completed")
    make_runs(3, "terminated")
    c = client_for(viewer)
    body = c.get(URL, {"status": "terminated"}).content.decode()
    assert body.count("badge badge-terminated") == 3 and body.count('badge badge-completed">') == 0
    assert 'aria-current="true"' in body
    partial = c.get(URL, {"status": "completed"}, HTTP_HX_REQUEST="true").content.decode()
    assert partial.lstrip().startswith('<div id="runs-table">') and partial.count("badge badge-completed") == 2
    assert c.get(URL, {"status": "bogus"}).status_code == 200


def test_query_count_does_not_grow(client_for, approver, django_assert_num_queries):
    c = client_for(approver)
    make_runs(2)
    c.get(URL)
    # session, user, group perms, user perms; runs count and page; memories count and page, their core
    # counts and run figures; status counts; teams, personas and projects (filter bar); the promotions badge count
    with django_assert_num_queries(15):
        c.get(URL)
    make_runs(12, "terminated")
    with django_assert_num_queries(15):
        c.get(URL)


def test_page_size_bounds_the_rows_read_and_shown(client_for, approver, monkeypatch, django_assert_num_queries):
    from memory.refinement import views

    monkeypatch.setattr(views, "RUNS_PER_PAGE", 3)
    monkeypatch.setattr(views, "MEMORIES_PER_PAGE", 2)
    make_runs(5)
    c = client_for(approver)
    with django_assert_num_queries(15):
        body = c.get(URL).content.decode()
    assert body.count('class="badge badge-completed"') == 3
    assert body.count("Run now</button>") == 2
    assert "Page 1 of 2 · 5 items" in body and "Page 1 of 3 · 5 items" in body
    older = c.get(URL, {"page": 2, "mpage": 3}).content.decode()
    assert older.count('class="badge badge-completed"') == 2 and older.count("Run now</button>") == 1


def test_persona_and_age_filters(client_for, viewer):
    make_runs(2)
    run = RefinementRun.objects.select_related("memory__persona").first()
    c = client_for(viewer)
    body = c.get(URL, {"persona": run.memory.persona_id}).content.decode()
    assert body.count('class="badge badge-completed"') == 1
    assert c.get(URL, {"age": "older"}).content.decode().count('class="badge badge-completed"') == 0
    assert c.get(URL, {"age": "day"}).content.decode().count('class="badge badge-completed"') == 2
