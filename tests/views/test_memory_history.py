from memory import services
from memory.models import ChangeBatch
from tests.factories import make_lesson
from tests.views.conftest import assert_login_redirect


def url(memory):
    return memory.history_url()


def test_anonymous_goes_to_login(client, memory):
    assert_login_redirect(client.get(url(memory)))


def test_newest_first_with_who_what_why_and_diff(client_for, viewer, curator, memory, lesson):
    services.lesson_update(
        lesson=lesson,
        actor=services.Actor.for_user(curator),
        reason="tighter wording",
        text="Always check session.user in login",
    )
    job = services.batch_create(
        memory=memory, kind=ChangeBatch.Kind.REFINEMENT, actor=services.Actor.job("refinement run 7"), label="dedupe"
    )
    make_lesson(memory, "Added by the job", batch=job)
    html = client_for(viewer).get(url(memory)).content.decode()
    assert html.index("refinement run 7") < html.index("tighter wording") < html.index("tests")
    assert "<del>" in html
    assert "<ins>" in html and "curator" in html
    assert "Revert" not in html  # a viewer gets no buttons


def test_curator_gets_revert_buttons(client_for, curator, memory, lesson):
    html = client_for(curator).get(url(memory)).content.decode()
    assert "/batches/" in html and "/revert/" in html


def test_htmx_returns_the_list(client_for, viewer, memory, lesson):
    html = client_for(viewer).get(url(memory), HTTP_HX_REQUEST="true").content.decode()
    assert html.lstrip().startswith('<div id="history-list"') and "<html" not in html


def test_hidden_characters_flagged_in_history(client_for, viewer, memory):
    make_lesson(memory, "Looks harmless\u2066 but is not")
    html = client_for(viewer).get(url(memory)).content.decode()
    assert "⟦U+2066⟧" in html and "Hidden characters" in html


def test_empty_state(client_for, viewer, memory):
    assert "No history yet" in client_for(viewer).get(url(memory)).content.decode()


def test_query_count_does_not_grow(client_for, viewer, memory, django_assert_num_queries):
    # session, user, user perms, group perms, memory, count, batches page, their first changes, their change
    # counts, the nav badge count
    client = client_for(viewer)
    for i in range(3):
        make_lesson(memory, f"Lesson {i}")
    with django_assert_num_queries(10):
        client.get(url(memory))
    for i in range(40):
        make_lesson(memory, f"More {i}")
    with django_assert_num_queries(10):
        client.get(url(memory))


def test_page_size_bounds_the_batches_and_the_changes_shown(
    client_for, curator, memory, monkeypatch, django_assert_num_queries
):
    from memory.lessons.views import history

    monkeypatch.setattr(history, "BATCHES_PER_PAGE", 2)
    monkeypatch.setattr(history, "CHANGES_PER_BATCH", 3)
    big = services.batch_create(
        memory=memory, kind=ChangeBatch.Kind.IMPORT, actor=services.Actor.job("import"), label="big import"
    )
    for i in range(7):
        make_lesson(memory, f"Imported {i}", batch=big)
    for i in range(2):
        make_lesson(memory, f"Single {i}")
    client = client_for(curator)
    with django_assert_num_queries(10):
        html = client.get(url(memory)).content.decode()
    assert html.count('<li class="change') == 2 and "big import" not in html  # the two newest single-change batches
    older = client.get(url(memory), {"page": 2}).content.decode()
    assert older.count('<li class="change') == 3  # three of the import's seven changes
    assert "and 4 more changes in this batch (7 in all)" in older and "Revert the whole batch" in older
