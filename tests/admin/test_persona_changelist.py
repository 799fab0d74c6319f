"""The persona list in the admin: state, per-tier lesson counts, search and filters, constant queries."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from personas import services as persona_services
from tests.factories import MemoryFactory, PersonaFactory, ProjectFactory, make_lesson

URL = reverse("admin:personas_persona_changelist")


def _personas_with_lessons(count, lessons_each, start=0):
    project = ProjectFactory()
    personas = []
    for i in range(start, start + count):
        persona = PersonaFactory(name=f"Agent {i:02d}")
        memory = MemoryFactory(persona=persona, project=project)
        for j in range(lessons_each):
            make_lesson(memory, f"Working lesson {i}-{j} about src/m{j}.py")
        make_lesson(memory, f"Core lesson of agent {i}", tier="core", category="PATTERN")
        personas.append(persona)
    return personas


def _count_queries(client):
    with CaptureQueriesContext(connection) as ctx:
        assert client.get(URL).status_code == 200
    return len(ctx.captured_queries)


@pytest.mark.django_db
def test_query_count_does_not_grow_with_personas_or_lessons(admin_client, django_assert_num_queries):
    _personas_with_lessons(2, 3)
    small = _count_queries(admin_client)
    _personas_with_lessons(18, 12, start=2)  # 20 personas now, many more lessons
    # Expected queries: session, user, the teams of the Team filter, persona count (filtered; no second
    # full count), the persona page, and one sum of the page's personas' memories (the lesson counts
    # each memory keeps, and how many memories); nothing per row.
    with django_assert_num_queries(small):
        response = admin_client.get(URL)
    assert response.status_code == 200
    assert response.context["cl"].result_count == 20
    assert small == 6


@pytest.mark.django_db
def test_page_size_bounds_the_rows_read(admin_client, monkeypatch, django_assert_num_queries):
    from personas.admin import PersonaAdmin

    monkeypatch.setattr(PersonaAdmin, "list_per_page", 4)
    _personas_with_lessons(9, 2)
    with django_assert_num_queries(6):
        response = admin_client.get(URL)
    assert len(response.context["cl"].result_list) == 4 and response.context["cl"].result_count == 9
    assert response.content.decode().count('class="field-core_lessons"') == 4
    last = admin_client.get(URL, {"p": 3})
    assert len(last.context["cl"].result_list) == 1


@pytest.mark.django_db
def test_lists_lesson_counts_per_tier_and_state(admin_client):
    project = ProjectFactory()
    persona = PersonaFactory(name="Counted")
    memory = MemoryFactory(persona=persona, project=project)
    for i in range(3):
        make_lesson(memory, f"working {i}")
    make_lesson(memory, "core one", tier="core", category="DECISION")
    from memory import services

    deleted = make_lesson(memory, "soon deleted")
    services.lesson_delete(lesson=deleted, actor=services.Actor.system("t"))

    response = admin_client.get(URL)
    row = next(p for p in response.context["cl"].result_list if p.pk == persona.pk)
    assert (row.n_core, row.n_working, row.n_projects) == (1, 3, 1)  # the deleted lesson is not counted
    html = response.content.decode()
    assert "Counted" in html and "Active" in html


@pytest.mark.django_db
def test_archived_personas_are_hidden_unless_filtered(admin_client):
    PersonaFactory(name="Visible")
    gone = PersonaFactory(name="Shelved")
    persona_services.persona_archive(persona=gone)

    names = lambda r: {p.name for p in r.context["cl"].result_list}  # noqa: E731
    assert names(admin_client.get(URL)) == {"Visible"}
    assert names(admin_client.get(URL, {"state": "archived"})) == {"Shelved"}
    assert names(admin_client.get(URL, {"state": "all"})) == {"Visible", "Shelved"}


@pytest.mark.django_db
def test_search_by_name_and_role(admin_client):
    PersonaFactory(name="Vera", role="Security Reviewer")
    PersonaFactory(name="Noor", role="QA Engineer")
    names = lambda q: {p.name for p in admin_client.get(URL, {"q": q}).context["cl"].result_list}  # noqa: E731
    assert names("vera") == {"Vera"}
    assert names("QA") == {"Noor"}


@pytest.mark.django_db
def test_bulk_delete_action_is_replaced_by_archive(admin_client):
    response = admin_client.get(URL)
    PersonaFactory()
    response = admin_client.get(URL)
    actions = [name for name, _ in response.context["action_form"].fields["action"].choices]
    assert "delete_selected" not in actions
    assert {"archive_selected", "restore_selected", "seed_default_personas"} <= set(actions)
