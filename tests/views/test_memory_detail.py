import re

from memory import services
from tests.factories import SYSTEM, make_lesson
from tests.views.conftest import assert_login_redirect


def url(memory, query=""):
    return memory.get_absolute_url() + (f"?{query}" if query else "")


def lesson_ids(html):
    return [int(x) for x in re.findall(r'id="lesson-(\d+)"', html)]


def test_anonymous_goes_to_login(client, memory):
    assert_login_redirect(client.get(url(memory)))


def test_viewer_sees_lessons_without_curation_buttons(client_for, viewer, memory, lesson):
    html = client_for(viewer).get(url(memory)).content.decode()
    assert "Core Lessons" in html
    assert "<code>session.user</code>" in html  # markdown rendered
    assert 'href="https://github.com/example/app/blob/main/src/auth/login.py#L42-L45"' in html
    assert "PATTERN" in html
    assert f"/lessons/{lesson.pk}/delete/" not in html
    assert f"/lessons/{lesson.pk}/edit/" not in html
    assert "Protect" not in html


def test_curator_sees_curation_buttons(client_for, curator, memory, lesson):
    html = client_for(curator).get(url(memory)).content.decode()
    assert f"/lessons/{lesson.pk}/delete/" in html
    assert f"/lessons/{lesson.pk}/edit/" in html


def test_unsafe_lesson_text_renders_inert(client_for, viewer, memory):
    make_lesson(memory, "<script>alert(1)</script>")
    make_lesson(memory, "[x](javascript:alert(1)) and [ok](https://example.com/a)")
    html = client_for(viewer).get(url(memory)).content.decode()
    assert "<script>alert(1)</script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert 'href="javascript' not in html.lower()
    assert "[x](javascript:alert(1))" in html
    assert '<a href="https://example.com/a" rel="nofollow noopener noreferrer">ok</a>' in html


def test_hidden_characters_are_shown_with_a_warning(client_for, viewer, memory):
    make_lesson(memory, "Trust the admin\u202e flag\u200b here")
    html = client_for(viewer).get(url(memory)).content.decode()
    assert "⟦U+202E⟧" in html and "⟦U+200B⟧" in html
    assert "Hidden characters" in html
    assert "\u202e" not in html


def test_filters(client_for, viewer, memory):
    auth = make_lesson(memory, "Auth rule", category="DECISION", refs="src/auth/login.py#L3")
    other = make_lesson(memory, "Billing note", category="OBSERVATION", refs="src/billing/pay.py", relevance="high")
    core = make_lesson(memory, "Core pattern", category="PATTERN", tier="core")
    gone = make_lesson(memory, "Removed lesson", category="TODO")
    services.lesson_delete(lesson=gone, actor=SYSTEM)
    client = client_for(viewer)
    get = lambda q: lesson_ids(client.get(url(memory, q)).content.decode())  # noqa: E731
    assert get("") == [core.pk, auth.pk, other.pk]
    assert get("category=DECISION") == [auth.pk]
    assert get("path=src/auth/") == [auth.pk]
    assert get("path=src/auth") == [auth.pk]
    assert get("path=src/auth/login.py") == [auth.pk]
    assert get("tier=core") == [core.pk]
    assert get("relevance=high") == [other.pk]
    assert get("q=billing") == [other.pk]
    assert get("status=deleted") == [gone.pk]
    assert get("status=all") == [core.pk, auth.pk, other.pk, gone.pk]
    assert get("category=bogus&tier=nope") == [core.pk, auth.pk, other.pk]


def test_empty_results_show_an_empty_state(client_for, viewer, memory, lesson):
    html = client_for(viewer).get(url(memory, "q=nothing-matches")).content.decode()
    assert "No lessons match these filters" in html


def test_budget_cut_marker(client_for, viewer, memory):
    memory.working_char_budget = 120
    memory.save()
    old = make_lesson(memory, "An old working lesson that will not fit in the budget any more")
    new = make_lesson(memory, "A recent working lesson that fits")
    html = client_for(viewer).get(url(memory)).content.decode()
    assert "budget starts here" in html
    assert html.index(f'id="lesson-{old.pk}"') < html.index("budget starts here") < html.index(f'id="lesson-{new.pk}"')
    assert "Not in prompt" in html


def test_htmx_filter_returns_only_the_list(client_for, viewer, memory, lesson):
    response = client_for(viewer).get(url(memory, "tier=core"), HTTP_HX_REQUEST="true", HTTP_HX_TARGET="lesson-list")
    html = response.content.decode()
    assert html.lstrip().startswith('<div id="lesson-list"')
    assert "<html" not in html
    assert lesson_ids(html) == [lesson.pk]


def test_full_page_branch_has_layout(client_for, viewer, memory, lesson):
    html = client_for(viewer).get(url(memory)).content.decode()
    assert "<html" in html and 'id="lesson-list"' in html


def test_pagination(client_for, viewer, memory):
    for i in range(55):
        make_lesson(memory, f"Lesson {i}")
    client = client_for(viewer)
    first = client.get(url(memory)).content.decode()
    second = client.get(url(memory, "page=2")).content.decode()
    assert len(lesson_ids(first)) == 50 and len(lesson_ids(second)) == 5
    assert "Page 1 of 2" in first


def test_unknown_memory_is_404(client_for, viewer, db):
    assert client_for(viewer).get("/memories/999999/").status_code == 404


def _fill(memory, n, start=0):
    for i in range(start, start + n):
        make_lesson(
            memory,
            f"Lesson {i} on src/m{i}.py",
            refs=f"src/m{i}.py#L{i + 1}",
            tier="core" if i % 10 == 0 else "working",
            category="PATTERN",
        )


def test_query_count_does_not_grow_with_lessons(client_for, viewer, memory, django_assert_num_queries):
    # session, user, user perms, group perms, memory, count, page of lessons, their refs,
    # their derived_from; compile_memory: core with refs, working with refs; usage: lessons + refs
    client = client_for(viewer)
    _fill(memory, 10)
    # … plus the review queue of the nav badges, the memory's own review queue, must-keep lessons with their refs,
    # coverage (2), the refs panel (2), the folder sync state (1 when no folder syncs this memory)
    with django_assert_num_queries(22):
        assert client.get(url(memory, "path=src/")).status_code == 200
    _fill(memory, 990, start=10)
    with django_assert_num_queries(20):  # this first page holds core lessons only: no coverage queries
        assert client.get(url(memory, "path=src/")).status_code == 200
    # Budget state is cached per memory version: an unchanged memory skips those six queries.
    with django_assert_num_queries(14):
        assert client.get(url(memory)).status_code == 200


def test_budget_state_follows_changes(client_for, curator, memory):
    lesson = make_lesson(memory, "Only lesson", tier="core", category="PATTERN")
    client = client_for(curator)
    assert "1 core lessons" not in client.get(url(memory)).content.decode()
    assert (
        '<span class="stat-num">1</span><span class="stat-label">core lessons'
        in client.get(url(memory)).content.decode()
    )
    services.lesson_delete(lesson=lesson, actor=SYSTEM)
    assert (
        '<span class="stat-num">0</span><span class="stat-label">core lessons'
        in client.get(url(memory)).content.decode()
    )


def test_a_path_with_lines_matches_the_lessons_whose_ranges_contain_them(client_for, viewer, memory):
    covering = make_lesson(memory, "Token check", refs="src/plugins/auth.ts#L10-L30")
    single = make_lesson(memory, "Exact line", refs="src/plugins/auth.ts#L20")
    whole_file = make_lesson(memory, "About the whole file", refs="src/plugins/auth.ts")
    make_lesson(memory, "Below the line", refs="src/plugins/auth.ts#L40-L60")
    make_lesson(memory, "Line 20 of another file", refs="src/plugins/other.ts#L1-L99")
    make_lesson(
        memory, "Two refs, the right file away from line 20", refs="src/plugins/auth.ts#L90, src/plugins/other.ts#L20"
    )
    client = client_for(viewer)
    found = lesson_ids(client.get(url(memory, "path=src/plugins/auth.ts%23L20")).content.decode())
    assert sorted(found) == sorted([covering.pk, single.pk, whole_file.pk])
    # A range matches every lesson it overlaps.
    found = set(lesson_ids(client.get(url(memory, "path=src/plugins/auth.ts%23L25-L45")).content.decode()))
    below = memory.lessons.get(text="Below the line")
    assert found == {covering.pk, whole_file.pk, below.pk}
    # Without lines the filter is the file itself, as before.
    assert len(lesson_ids(client.get(url(memory, "path=src/plugins/auth.ts")).content.decode())) == 5


def _expired(memory, text, days_ago=1):
    from datetime import timedelta

    from django.utils import timezone

    lesson = make_lesson(memory, text)
    return services.lesson_set_expiry(
        lesson=lesson, expires_on=timezone.localdate() - timedelta(days=days_ago), actor=SYSTEM
    )


def test_an_expired_lesson_is_marked_and_waits_in_the_memorys_queue(client_for, viewer, approver, memory):
    from datetime import timedelta

    from django.utils import timezone

    expired = _expired(memory, "Use the staging mirror for the migration week.")
    soon = make_lesson(memory, "Banner stays up until the sale ends.")
    services.lesson_set_expiry(
        lesson=soon, expires_on=timezone.localdate() + timedelta(days=5), expires_when="the sale ends", actor=SYSTEM
    )
    html = client_for(viewer).get(url(memory)).content.decode()
    row = html[html.index(f'id="lesson-{expired.pk}"') :]
    row = row[: row.index("</article>")]
    assert "badge-expired" in row and "Expired" in row and "Not in prompt" not in row
    assert "conflicts/expiries/lessons" not in row  # a viewer reads only
    later = html[html.index(f'id="lesson-{soon.pk}"') :]
    assert "Expires " in later[: later.index("</article>")] and "Until the sale ends" in later
    assert 'data-review="expired">1 expired lesson' in html
    assert f"expired-{expired.pk}" in html  # the queue links the lesson's row on the expiries page

    approver_html = client_for(approver).get(url(memory)).content.decode()
    assert f"/conflicts/expiries/lessons/{expired.pk}/restore/" in approver_html


def test_the_status_filter_lists_expired_lessons(client_for, viewer, memory):
    expired = _expired(memory, "Old mirror note.")
    live = make_lesson(memory, "Live note.")
    html = client_for(viewer).get(url(memory, "status=expired")).content.decode()
    assert lesson_ids(html) == [expired.pk]
    assert set(lesson_ids(client_for(viewer).get(url(memory)).content.decode())) == {expired.pk, live.pk}
