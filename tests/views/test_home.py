from datetime import UTC, datetime

from django.utils import timezone

from memory.review_queue import _SOURCES, pending_review_counts, register_review_source
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
    memory.last_reflected_at = datetime(2026, 3, 4, 12, tzinfo=UTC)
    memory.save()
    html = client_for(viewer).get(URL).content.decode()
    assert memory.persona.name in html and memory.project.name in html
    assert "<strong>1</strong> core" in html
    assert "<strong>2</strong> working" in html
    assert memory.get_absolute_url() in html
    assert "Mar 4" in html
    assert "Nothing to review" in html and "Nothing waits for review" in html


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
    assert "Show 1 memory of archived personas" in html
    html = client.get(URL + "?archived=1").content.decode()
    assert "Old Reviewer" in html and archived.get_absolute_url() in html


def test_review_counts_come_from_registered_sources(client_for, viewer, memory):
    @register_review_source("test-source", singular="test item", plural="test items")
    def source(memory_ids):
        return {memory.pk: 2}

    try:
        assert pending_review_counts([memory.pk]) == {memory.pk: 2}
        assert "2 test items" in client_for(viewer).get(URL).content.decode()
    finally:
        _SOURCES.pop("test-source")


def test_empty_state(client_for, viewer):
    assert "No memories yet" in client_for(viewer).get(URL).content.decode()


def _fill(n, personas=2, projects=2):
    projects = [ProjectFactory() for _ in range(projects)]
    for persona in [PersonaFactory() for _ in range(personas)]:
        for project in projects:
            memory = MemoryFactory(persona=persona, project=project)
            for i in range(n):
                make_lesson(
                    memory,
                    f"Lesson {i} about src/m{i}.py",
                    refs=f"src/m{i}.py#L{i + 1}",
                    tier="core" if i % 5 == 0 else "working",
                    category="PATTERN",
                )


def _count(client, django_assert_num_queries, expected, url=URL):
    with django_assert_num_queries(expected) as ctx:
        assert client.get(url).status_code == 200
    return ctx


# session, user, user permissions, group permissions, the review totals (one UNION counting pending
# promotions, pending compactions, refinement and pipeline runs that need a look, file conflicts and refs
# to review; shared by both nav badges and the page), the team headings (one grouped count), the page's
# count, the page's memories, one aggregate of the page's lessons, the review counts of the page's memories,
# and whether the person approves in any team (their memberships: paused webhooks are shown to approvers)
HOME_QUERIES = 11


def test_query_count_does_not_grow_with_lessons(client_for, viewer, django_assert_num_queries, db):
    client = client_for(viewer)
    _fill(10)
    _count(client, django_assert_num_queries, HOME_QUERIES)
    _fill(250)  # 4 more memories with 250 lessons each: 1,000 more lessons
    _count(client, django_assert_num_queries, HOME_QUERIES)


def test_query_count_does_not_grow_with_memories(client_for, viewer, django_assert_num_queries, db):
    client = client_for(viewer)
    _fill(2, personas=9, projects=7)  # 63 memories: more than a page
    _count(client, django_assert_num_queries, HOME_QUERIES)
    _count(client, django_assert_num_queries, HOME_QUERIES, url=URL + "?page=2")


def test_page_size_bounds_the_lessons_read(client_for, viewer, db):
    """The lesson aggregate reads the lessons of the page's memories only, never the organisation's."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from memory.lessons.selectors import HOME_PAGE_SIZE

    _fill(3, personas=9, projects=7)
    with CaptureQueriesContext(connection) as ctx:
        html = client_for(viewer).get(URL).content.decode()
    lesson_reads = [q["sql"] for q in ctx.captured_queries if q["sql"].startswith('SELECT "memory_lesson"')]
    assert len(lesson_reads) == 1, lesson_reads
    sql = lesson_reads[0]
    assert '"memory_lesson"."memory_id" IN (' in sql
    in_list = sql.split('"memory_lesson"."memory_id" IN (')[1].split(")")[0]
    assert len(in_list.split(",")) == HOME_PAGE_SIZE
    assert html.count('<li class="memory-card') == HOME_PAGE_SIZE
    assert "Page 1 of 3" in html


def test_review_counts_read_totals_and_the_pages_memories_only(client_for, viewer, db):
    """The badges and the queue summary read one total per kind of item; the cards' counts name the
    page's memories only: nothing comes back per memory of the organisation."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from memory.lessons.selectors import HOME_PAGE_SIZE
    from memory.models import Memory, RefinementRun

    _fill(1, personas=9, projects=7)
    for memory in Memory.objects.all():
        RefinementRun.objects.create(memory=memory, status=RefinementRun.Status.FAILED, engine="offline")
    with CaptureQueriesContext(connection) as ctx:
        html = client_for(viewer).get(URL).content.decode()
    # (the third query naming runs is the overdue summary: one count and oldest date per kind)
    review = [q["sql"] for q in ctx.captured_queries if "memory_refinementrun" in q["sql"] and "MIN(" not in q["sql"]]
    assert len(review) == 2, review
    marker = '"memory_refinementrun"."memory_id" IN ('
    (totals,) = [sql for sql in review if marker not in sql]  # every memory the viewer sees, one count
    (per_memory,) = [sql for sql in review if marker in sql]
    assert 'AS "memory_ref"' not in totals and 'AS "memory_ref"' in per_memory  # no row per memory in totals
    in_list = per_memory.split(marker)[1].split(")")[0]
    assert len(in_list.split(",")) == HOME_PAGE_SIZE
    assert "63 refinement runs to look at" in html
    assert html.count("1 refinement run to look at") == HOME_PAGE_SIZE


def test_filter_by_name_and_waiting(client_for, viewer, memory, other_persona, project):
    other = MemoryFactory(persona=other_persona, project=project)
    client = client_for(viewer)
    html = client.get(URL + "?q=" + other_persona.name[:3]).content.decode()
    assert other.get_absolute_url() in html and memory.get_absolute_url() not in html
    html = client.get(URL + "?waiting=1").content.decode()
    assert "No memory matches these filters" in html


def test_waiting_keeps_the_memories_with_something_to_review(client_for, viewer, memory, other_persona, project):
    """Each kind of item counts: a failed run in one memory, a ref to review in another."""
    from memory.models import RefinementRun
    from memory.refs.models import RefAnchor

    failed = MemoryFactory(persona=other_persona, project=project)
    RefinementRun.objects.create(memory=failed, status=RefinementRun.Status.FAILED, engine="offline")
    moved = MemoryFactory(project=project)
    make_lesson(moved, "Retries live in src/retry.py", refs="src/retry.py#L3")
    RefAnchor.objects.filter(refs__lesson__memory=moved).update(status="moved")
    quiet = MemoryFactory(project=project)
    make_lesson(quiet, "Nothing waits here")
    html = client_for(viewer).get(URL + "?waiting=1").content.decode()
    assert failed.get_absolute_url() in html and moved.get_absolute_url() in html
    assert quiet.get_absolute_url() not in html and memory.get_absolute_url() not in html
