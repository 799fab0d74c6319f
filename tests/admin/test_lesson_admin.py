"""Lessons in the admin: read-only pages, filters, refs inline, and bulk curation through the services."""

import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from memory import services
from memory.models import Change, ChangeBatch, Lesson, LessonStatus
from tests.factories import MemoryFactory, make_lesson

URL = reverse("admin:memory_lesson_changelist")


def _fill(memory, n, start=0):
    for i in range(start, start + n):
        make_lesson(memory, f"Lesson {i} about the checkout flow", refs=f"src/a{i}.ts#L{i + 1}-L{i + 5}, src/b.ts")


def _queries(client, params=None):
    with CaptureQueriesContext(connection) as ctx:
        assert client.get(URL, params or {}).status_code == 200
    return len(ctx.captured_queries)


@pytest.mark.django_db
def test_changelist_query_count_is_constant(admin_client, django_assert_num_queries):
    memory = MemoryFactory()
    _fill(memory, 3)
    small = _queries(admin_client)
    _fill(memory, 40, start=3)
    _fill(MemoryFactory(), 20, start=100)
    # session, user, count, the page of lessons, prefetches of their refs, memories, personas and projects,
    # and the fixed lists behind the persona/project filters (no date hierarchy: its DISTINCT reads every lesson).
    with django_assert_num_queries(small):
        response = admin_client.get(URL)
    assert response.context["cl"].result_count == 63
    assert small == 10


@pytest.mark.django_db
def test_page_size_bounds_the_rows_read(admin_client, monkeypatch, django_assert_num_queries):
    from memory.admin import LessonAdmin

    monkeypatch.setattr(LessonAdmin, "list_per_page", 5)
    _fill(MemoryFactory(), 12)
    with django_assert_num_queries(10):
        response = admin_client.get(URL, {"tier__exact": "working"})
    assert len(response.context["cl"].result_list) == 5 and response.context["cl"].result_count == 12
    assert response.context["cl"].full_result_count is None  # no second count over every lesson
    assert admin_client.get(URL, {"p": 3}).context["cl"].result_list.count() == 2


@pytest.mark.django_db
def test_changelist_shows_refs_and_filters_by_tier_category_status(admin_client):
    memory = MemoryFactory()
    make_lesson(memory, "Core decision on money", tier="core", category="DECISION", refs="src/money.ts#L1-L9")
    make_lesson(memory, "A hypothesis about caching", category="HYPOTHESIS")
    gone = make_lesson(memory, "An old todo", category="TODO")
    services.lesson_delete(lesson=gone, actor=services.Actor.system("t"))

    html = admin_client.get(URL).content.decode()
    assert "src/money.ts#L1-L9" in html

    texts = lambda params: {lesson.text for lesson in admin_client.get(URL, params).context["cl"].result_list}  # noqa: E731
    assert texts({"tier__exact": "core"}) == {"Core decision on money"}
    assert texts({"category__exact": "HYPOTHESIS"}) == {"A hypothesis about caching"}
    assert texts({"status__exact": "deleted"}) == {"An old todo"}
    assert texts({"q": "src/money.ts"}) == {"Core decision on money"}


@pytest.mark.django_db
def test_lesson_page_is_read_only_with_refs_inline(admin_client):
    lesson = make_lesson(MemoryFactory(), "Read me", refs="src/x.py#L3-L4, docs/y.md")
    url = reverse("admin:memory_lesson_change", args=[lesson.pk])
    response = admin_client.get(url)
    assert response.status_code == 200
    html = response.content.decode()
    assert "src/x.py" in html and "docs/y.md" in html
    assert 'name="text"' not in html  # no editable text field
    admin_client.post(url, {"text": "Changed"})
    lesson.refresh_from_db()
    assert lesson.text == "Read me"
    assert admin_client.get(reverse("admin:memory_lesson_add")).status_code == 403


@pytest.mark.django_db
def test_bulk_actions_go_through_services_one_batch_per_memory(admin_client):
    m1, m2 = MemoryFactory(), MemoryFactory()
    a, b, c = make_lesson(m1, "one"), make_lesson(m1, "two"), make_lesson(m2, "three")
    response = admin_client.post(
        URL, {"action": "protect", "index": "0", ACTION_CHECKBOX_NAME: [a.pk, b.pk, c.pk]}, follow=True
    )
    assert "Protected: 3 lesson(s)" in response.content.decode()
    assert Lesson.objects.filter(protected=True).count() == 3
    batches = ChangeBatch.objects.filter(label="Admin: protected")
    assert batches.count() == 2
    assert Change.objects.filter(batch__in=batches, action="protect").count() == 3

    # protected lessons refuse deletion and say so; the others are soft-deleted
    services.lesson_set_protected(lesson=c, protected=False, actor=services.Actor.system("t"))
    response = admin_client.post(
        URL, {"action": "soft_delete", "index": "0", ACTION_CHECKBOX_NAME: [a.pk, c.pk]}, follow=True
    )
    html = response.content.decode()
    assert "Deleted: 1 lesson(s)" in html and "protected" in html
    assert Lesson.objects.get(pk=c.pk).status == LessonStatus.DELETED
    assert Lesson.objects.get(pk=a.pk).status == LessonStatus.ACTIVE


@pytest.mark.django_db
def test_viewer_staff_cannot_run_curation_actions(client, django_user_model, viewer):
    from django.contrib.auth.models import Permission

    viewer.is_staff = True
    viewer.save()
    viewer.user_permissions.add(Permission.objects.get(codename="view_lesson"))
    client.force_login(viewer)
    lesson = make_lesson(MemoryFactory(), "keep as is")
    response = client.get(URL)
    actions = (
        [name for name, _ in response.context["action_form"].fields["action"].choices]
        if response.context.get("action_form")
        else []
    )
    assert "protect" not in actions
    client.post(URL, {"action": "protect", "index": "0", ACTION_CHECKBOX_NAME: [lesson.pk]})
    assert not Lesson.objects.get(pk=lesson.pk).protected


@pytest.mark.django_db
def test_invisible_and_bidi_characters_are_shown_and_markup_escaped(admin_client):
    lesson = make_lesson(MemoryFactory(), "Check \u202eevil\u202c and zero\u200bwidth <b>bold</b>")
    list_html = admin_client.get(URL).content.decode()
    page = admin_client.get(reverse("admin:memory_lesson_change", args=[lesson.pk])).content.decode()
    for html in (list_html, page):
        assert "⟦U+202E⟧" in html and "⟦U+200B⟧" in html
        assert "&lt;b&gt;bold&lt;/b&gt;" in html and "<b>bold</b>" not in html
    # the raw control character stays out of the visible page (title and breadcrumbs included)
    assert "\u202e" not in page
