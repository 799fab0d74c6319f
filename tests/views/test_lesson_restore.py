from memory import services
from memory.models import LessonStatus
from tests.factories import SYSTEM


def url(lesson):
    return f"/lessons/{lesson.pk}/restore/"


def test_get_is_405(client_for, curator, lesson):
    assert client_for(curator).get(url(lesson)).status_code == 405


def test_anonymous_goes_to_login(client, lesson):
    response = client.post(url(lesson))
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_viewer_gets_403(client_for, viewer, lesson):
    services.lesson_delete(lesson=lesson, actor=SYSTEM)
    assert client_for(viewer).post(url(lesson)).status_code == 403
    lesson.refresh_from_db()
    assert lesson.status == LessonStatus.DELETED


def test_htmx_restore(client_for, curator, lesson):
    services.lesson_delete(lesson=lesson, actor=SYSTEM)
    html = client_for(curator).post(url(lesson), {"reason": "still true"}, HTTP_HX_REQUEST="true").content.decode()
    lesson.refresh_from_db()
    assert lesson.status == LessonStatus.ACTIVE and "Delete" in html


def test_full_page_restore_with_message(client_for, curator, lesson):
    services.lesson_delete(lesson=lesson, actor=SYSTEM)
    response = client_for(curator).post(url(lesson), follow=True)
    assert "Lesson restored." in response.content.decode()


def test_restoring_an_active_lesson_is_a_clear_error(client_for, curator, lesson):
    html = client_for(curator).post(url(lesson), HTTP_HX_REQUEST="true").content.decode()
    assert "cannot change it to active" in html
