from datetime import datetime, timezone as dt_timezone

from django.utils import timezone

from memory.review_queue import pending_review_counts, register_review_source, _SOURCES
from tests.factories import MemoryFactory, PersonaFactory, ProjectFactory, make_lesson
from tests.views.conftest import assert_login_redirect

URL = "/"


def test_anonymous_goes_to_login(client, db):
    assert_login_redirect(client.get(URL))


def test_user_without_role_gets_403(client, django_user_model):
    user = django_user_model.objects.create_user("nobody", password="x")
    client.force_login(user)
    assert client.get(URL).status_code == 403


def test_grid_shows_counts_budgets_and_dates(client_for, viewer, memory):
    make_lesson(memory, "Core rule", category="PATTERN", tier="core")
    make_lesson(memory, "Working note one")
    make_lesson(memory, "Working note two")
    memory.last_reflected_at = datetime(2026, 3, 4, 12, tzinfo=dt_timezone.utc)
    memory.save()
    html = client_for(viewer).get(URL).content.decode()
    assert memory.persona.name in html and memory.project.name in html
    assert "<strong>1</strong> core" in html
    assert "<strong>2</strong> working" in html
    assert f"/memories/{memory.pk}/" in html
    assert "Mar 4" in html
    assert "0 to review" in html


def test_over_budget_tier_is_marked(client_for, viewer, memory):
    memory.core_char_budget = 10
    memory.save()
    make_lesson(memory, "A core rule that is much longer than ten characters", category="PATTERN", tier="core")
    html = client_for(viewer).get(URL).content.decode()
    assert "budget budget-over" in html


def test_archived_personas_hidden_behind_toggle(client_for, viewer, project):
    live = MemoryFactory(project=project)
    archived = MemoryFactory(project=project, persona=PersonaFactory(name="Old Reviewer", archived_at=timezone.now()))
    client = client_for(viewer)
    html = client.get(URL).content.decode()
    assert live.persona.name in html and "Old Reviewer" not in html
    assert "Show 1 archived persona" in html
    html = client.get(URL + "?archived=1").content.decode()
    assert "Old Reviewer" in html and f"/memories/{archived.pk}/" in html


def test_review_counts_come_from_registered_sources(client_for, viewer, memory):
    @register_review_source("test-source")
    def source(memory_ids):
        return {memory.pk: 2}

    try:
        assert pending_review_counts([memory.pk]) == {memory.pk: 2}
        assert "2 to review" in client_for(viewer).get(URL).content.decode()
    finally:
        _SOURCES.pop("test-source")


def test_empty_state(client_for, viewer):
    assert "No memories yet" in client_for(viewer).get(URL).content.decode()


def _fill(n):
    projects = [ProjectFactory() for _ in range(2)]
    for persona in [PersonaFactory() for _ in range(2)]:
        for project in projects:
            memory = MemoryFactory(persona=persona, project=project)
            for i in range(n):
                make_lesson(memory, f"Lesson {i} about src/m{i}.py", refs=f"src/m{i}.py#L{i + 1}",
                            tier="core" if i % 5 == 0 else "working", category="PATTERN")


def _count(client, django_assert_num_queries, expected):
    with django_assert_num_queries(expected) as ctx:
        assert client.get(URL).status_code == 200
    return ctx


def test_query_count_does_not_grow_with_lessons(client_for, viewer, django_assert_num_queries, db):
    # session, user, user permissions, group permissions, personas, projects, memories, lessons, refs, archived count,
    # pending promotions, pending compactions and refs needing review (the "to review" counts), pending
    # promotions (nav badge)
    client = client_for(viewer)
    _fill(10)
    _count(client, django_assert_num_queries, 14)
    _fill(250)  # 4 more memories with 250 lessons each: 1,000 more lessons
    _count(client, django_assert_num_queries, 14)
