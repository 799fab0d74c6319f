from memory import services
from tests.views.conftest import assert_login_redirect


def url(lesson):
    return f"/lessons/{lesson.pk}/history/"


def test_anonymous_goes_to_login(client, lesson):
    assert_login_redirect(client.get(url(lesson)))


def test_changes_newest_first_with_diff(client_for, viewer, curator, lesson):
    actor = services.Actor.for_user(curator)
    services.lesson_update(lesson=lesson, actor=actor, reason="fix wording", text="Always verify the session user")
    services.lesson_set_protected(lesson=lesson, protected=True, actor=actor, reason="foundational")
    html = client_for(viewer).get(url(lesson)).content.decode()
    assert html.index("Protected") < html.index("fix wording") < html.index("Created")
    assert "<del>" in html and "<ins>" in html
    assert "change_revert" not in html and "/revert/" not in html


def test_curator_can_revert_from_here(client_for, curator, lesson):
    html = client_for(curator).get(url(lesson)).content.decode()
    assert "/revert/" in html


def test_htmx_returns_the_list(client_for, viewer, lesson):
    html = client_for(viewer).get(url(lesson), HTTP_HX_REQUEST="true").content.decode()
    assert html.lstrip().startswith('<div id="history-list"')


def test_unknown_lesson_is_404(client_for, viewer, db):
    assert client_for(viewer).get("/lessons/424242/history/").status_code == 404


def test_query_count_does_not_grow(client_for, viewer, curator, lesson, django_assert_num_queries):
    # session, user, user perms, group perms, lesson (+memory, persona, project, interaction, superseded_by),
    # its refs, its derived_from, count, page of changes with their batches
    client = client_for(viewer)
    actor = services.Actor.for_user(curator)
    with django_assert_num_queries(10):  # … plus the nav badge count
        client.get(url(lesson))
    for i in range(30):
        services.lesson_update(lesson=lesson, actor=actor, text=f"Edit number {i}")
    with django_assert_num_queries(10):  # … plus the nav badge count
        client.get(url(lesson))


def test_page_size_bounds_the_changes_read_and_shown(
    client_for, viewer, curator, lesson, monkeypatch, django_assert_num_queries
):
    from memory.lessons.views import history

    monkeypatch.setattr(history, "CHANGES_PER_PAGE", 3)
    actor = services.Actor.for_user(curator)
    for i in range(6):
        services.lesson_update(lesson=lesson, actor=actor, text=f"Edit number {i}")
    client = client_for(viewer)
    with django_assert_num_queries(10):
        response = client.get(url(lesson))
    assert len(response.context["entries"]) == 3 and "Page 1 of 3 · 7 items" in response.content.decode()
    assert "Edit number 5" in response.content.decode() and "Edit number 1" not in response.content.decode()
    last = client.get(url(lesson), {"page": 3})
    assert len(last.context["entries"]) == 1


def test_an_expired_lesson_says_so_and_links_where_to_decide(client_for, viewer, memory):
    from datetime import date

    from tests.factories import SYSTEM, make_lesson

    lesson = make_lesson(memory, "Skip the flaky suite until the 2.3 rollout reaches 100 %.")
    services.lesson_set_expiry(
        lesson=lesson, expires_on=date(2026, 1, 8), expires_when="the 2.3 rollout reaches 100 %", actor=SYSTEM
    )
    html = client_for(viewer).get(url(lesson)).content.decode()
    assert "badge-expired" in html and "Jan 8, 2026" in html and "the 2.3 rollout reaches 100 %" in html
    assert f"/conflicts/expiries/?show=expired#expired-{lesson.pk}" in html
