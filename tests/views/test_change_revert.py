from memory import services
from memory.models import Change, LessonStatus


def url(change):
    return f"/changes/{change.pk}/revert/"


def _edit(lesson, user, text):
    services.lesson_update(lesson=lesson, actor=services.Actor.for_user(user), text=text)
    return Change.objects.filter(lesson=lesson).first()


def test_get_is_405(client_for, curator, lesson):
    assert client_for(curator).get(url(lesson.changes.first())).status_code == 405


def test_anonymous_goes_to_login(client, lesson):
    response = client.post(url(lesson.changes.first()))
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_viewer_gets_403_and_nothing_changes(client_for, viewer, curator, lesson):
    change = _edit(lesson, curator, "Edited text")
    assert client_for(viewer).post(url(change)).status_code == 403
    lesson.refresh_from_db()
    assert lesson.text == "Edited text"


def test_full_page_revert_restores_and_redirects(client_for, curator, lesson):
    original = lesson.text
    change = _edit(lesson, curator, "Edited text")
    response = client_for(curator).post(url(change), {"reason": "bad edit"})
    assert response.status_code == 302 and response["Location"] == f"/lessons/{lesson.pk}/history/"
    lesson.refresh_from_db()
    assert lesson.text == original
    change.refresh_from_db()
    assert change.reverted_by.batch.reason == "bad edit"


def test_htmx_revert_redirects_client(client_for, curator, lesson):
    change = _edit(lesson, curator, "Edited text")
    response = client_for(curator).post(url(change), {"next": f"/lessons/{lesson.pk}/history/"}, HTTP_HX_REQUEST="true")
    assert response.status_code == 200 and response["HX-Redirect"] == f"/lessons/{lesson.pk}/history/"


def test_reverting_twice_is_a_clear_message(client_for, curator, lesson):
    change = _edit(lesson, curator, "Edited text")
    client = client_for(curator)
    client.post(url(change))
    html = client.post(url(change), HTTP_HX_REQUEST="true").content.decode()
    assert "already reverted" in html
    response = client.post(url(change), follow=True)
    assert "already reverted" in response.content.decode()


def test_revert_blocked_by_later_change(client_for, curator, lesson):
    first = _edit(lesson, curator, "First edit")
    _edit(lesson, curator, "Second edit")
    html = client_for(curator).post(url(first), HTTP_HX_REQUEST="true").content.decode()
    assert "changed again after this" in html
    lesson.refresh_from_db()
    assert lesson.text == "Second edit" and lesson.status == LessonStatus.ACTIVE
