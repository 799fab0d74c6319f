from memory.models import Change, Lesson
from tests.views.conftest import assert_login_redirect


def url(lesson):
    return f"/lessons/{lesson.pk}/edit/"


def post_data(**overrides):
    data = {
        "text": "Check **session.user** first",
        "category": "DECISION",
        "relevance": "high",
        "refs": "src/auth/login.py#L1-L5, src/auth/views.py",
        "reason": "clearer",
    }
    data.update(overrides)
    return data


def test_anonymous_goes_to_login(client, lesson):
    assert_login_redirect(client.get(url(lesson)))
    assert_login_redirect(client.post(url(lesson), post_data()))


def test_viewer_gets_403_and_nothing_changes(client_for, viewer, lesson):
    client = client_for(viewer)
    assert client.get(url(lesson)).status_code == 403
    assert client.post(url(lesson), post_data()).status_code == 403
    lesson.refresh_from_db()
    assert lesson.text.startswith("Always check")
    assert Change.objects.filter(lesson=lesson).count() == 1


def test_get_full_page_shows_form(client_for, curator, lesson):
    html = client_for(curator).get(url(lesson)).content.decode()
    assert "<html" in html and 'name="text"' in html and "src/auth/login.py#L42-L45" in html


def test_get_htmx_returns_inline_form(client_for, curator, lesson):
    html = client_for(curator).get(url(lesson), HTTP_HX_REQUEST="true").content.decode()
    assert "<html" not in html
    assert f'id="lesson-{lesson.pk}"' in html and "autofocus" in html


def test_htmx_post_saves_through_services_and_returns_row(client_for, curator, lesson):
    response = client_for(curator).post(url(lesson), post_data(), HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    html = response.content.decode()
    assert "<strong>session.user</strong>" in html and "<html" not in html
    lesson.refresh_from_db()
    assert (lesson.text, lesson.category, lesson.relevance) == ("Check **session.user** first", "DECISION", "high")
    assert [r.as_text() for r in lesson.refs.all()] == ["src/auth/login.py#L1-L5", "src/auth/views.py"]
    change = Change.objects.filter(lesson=lesson).first()
    assert change.action == "update"
    assert change.batch.actor_user == curator and change.batch.reason == "clearer"


def test_full_page_post_redirects_back(client_for, curator, lesson):
    response = client_for(curator).post(url(lesson), post_data())
    assert response.status_code == 302
    assert response["Location"] == lesson.memory.get_absolute_url() + f"#lesson-{lesson.pk}"


def test_bad_input_shows_errors_and_changes_nothing(client_for, curator, lesson):
    client = client_for(curator)
    before = Lesson.objects.get(pk=lesson.pk).text
    response = client.post(url(lesson), post_data(refs="src/a.py#L9-L2"), HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    assert "the range ends before it starts" in response.content.decode()
    # A core lesson cannot take a working-only category.
    response = client.post(url(lesson), post_data(category="TODO"))
    assert response.status_code == 400
    assert "Select a valid choice" in response.content.decode()
    response = client.post(url(lesson), post_data(text="two\nlines"))
    assert "single line" in response.content.decode()
    lesson.refresh_from_db()
    assert lesson.text == before and Change.objects.filter(lesson=lesson).count() == 1


def test_row_after_an_inline_edit_keeps_its_coverage_chip(client_for, curator, memory):
    from tests.factories import make_lesson

    observation = make_lesson(memory, "Retry decorator swallows TimeoutError", refs="src/common/retry.py#L5-L22")
    page = client_for(curator).get(memory.get_absolute_url()).content.decode()
    assert 'data-coverage="uncited"' in page
    html = (
        client_for(curator)
        .post(url(observation), post_data(category="OBSERVATION"), HTTP_HX_REQUEST="true")
        .content.decode()
    )
    assert 'data-coverage="uncited"' in html


def test_a_deleted_lesson_offers_no_edit_and_cannot_be_edited(client_for, curator, lesson, user_actor):
    from memory import services

    services.lesson_delete(lesson=lesson, actor=user_actor)
    client = client_for(curator)
    row = client.get(f"/lessons/{lesson.pk}/", HTTP_HX_REQUEST="true").content.decode()
    assert ">Edit<" not in row and ">Restore<" in row
    html = client.post(url(lesson), post_data(), HTTP_HX_REQUEST="true").content.decode()
    assert "restore it before editing it" in html
    lesson.refresh_from_db()
    assert lesson.status == "deleted" and lesson.text.startswith("Always check")
    response = client.get(url(lesson))
    assert response.status_code == 302
