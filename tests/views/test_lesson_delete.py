from memory import services
from memory.models import Change, LessonStatus
from tests.factories import SYSTEM


def url(lesson):
    return f"/lessons/{lesson.pk}/delete/"


def test_get_is_405(client_for, curator, lesson):
    assert client_for(curator).get(url(lesson)).status_code == 405


def test_anonymous_goes_to_login(client, lesson):
    response = client.post(url(lesson))
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_viewer_crafted_post_gets_403_and_nothing_changes(client_for, viewer, lesson):
    assert client_for(viewer).post(url(lesson), {"reason": "x"}).status_code == 403
    lesson.refresh_from_db()
    assert lesson.status == LessonStatus.ACTIVE


def test_htmx_delete_is_soft_and_offers_restore(client_for, curator, lesson):
    html = client_for(curator).post(url(lesson), {"reason": "obsolete"}, HTTP_HX_REQUEST="true").content.decode()
    lesson.refresh_from_db()
    assert lesson.status == LessonStatus.DELETED
    assert "Restore" in html and "Deleted" in html
    # The summary above the list is refreshed out of band: one core lesson fewer.
    assert 'id="memory-summary" aria-label="Memory summary" hx-swap-oob="true"' in html
    assert '<span class="stat-num">0</span><span class="stat-label">core lessons</span>' in html
    change = Change.objects.filter(lesson=lesson).first()
    assert change.action == "delete" and change.batch.reason == "obsolete" and change.batch.actor_user == curator


def test_full_page_delete_redirects_back(client_for, curator, lesson):
    response = client_for(curator).post(url(lesson), {"next": lesson.memory.get_absolute_url() + "?tier=core"})
    assert response.status_code == 302 and response["Location"] == lesson.memory.get_absolute_url() + "?tier=core"


def test_offsite_next_is_ignored(client_for, curator, lesson):
    response = client_for(curator).post(url(lesson), {"next": "https://evil.example/"})
    assert response["Location"].startswith(lesson.memory.get_absolute_url())


def test_protected_lesson_refuses_with_message(client_for, curator, lesson):
    services.lesson_set_protected(lesson=lesson, protected=True, actor=SYSTEM)
    html = client_for(curator).post(url(lesson), HTTP_HX_REQUEST="true").content.decode()
    assert "protected; unprotect it before deleting" in html
    lesson.refresh_from_db()
    assert lesson.status == LessonStatus.ACTIVE
