from memory import services
from memory.models import ChangeBatch, LessonStatus
from tests.factories import make_lesson


def url(batch):
    return f"/batches/{batch.pk}/revert/"


def _job_batch(memory):
    batch = services.batch_create(
        memory=memory, kind=ChangeBatch.Kind.REFLECTION, actor=services.Actor.job("reflection 12"), label="after review"
    )
    lessons = [make_lesson(memory, f"Job lesson {i}", batch=batch) for i in range(3)]
    return batch, lessons


def test_get_is_405(client_for, curator, memory):
    batch, _ = _job_batch(memory)
    assert client_for(curator).get(url(batch)).status_code == 405


def test_anonymous_goes_to_login(client, memory):
    batch, _ = _job_batch(memory)
    response = client.post(url(batch))
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_viewer_gets_403(client_for, viewer, memory):
    batch, lessons = _job_batch(memory)
    assert client_for(viewer).post(url(batch)).status_code == 403
    assert all(lesson.status == LessonStatus.ACTIVE for lesson in lessons)


def test_full_page_revert_of_a_whole_batch(client_for, curator, memory):
    batch, lessons = _job_batch(memory)
    response = client_for(curator).post(url(batch), {"reason": "noise"}, follow=True)
    assert "3 changes undone as one new batch" in response.content.decode()
    for lesson in lessons:
        lesson.refresh_from_db()
        assert lesson.status == LessonStatus.DELETED
    batch.refresh_from_db()
    assert batch.reverted_by.changes.count() == 3 and batch.reverted_by.reason == "noise"


def test_htmx_revert(client_for, curator, memory):
    batch, _ = _job_batch(memory)
    response = client_for(curator).post(url(batch), HTTP_HX_REQUEST="true")
    assert response["HX-Redirect"] == memory.history_url()


def test_blocked_revert_shows_message_and_changes_nothing(client_for, curator, memory):
    batch, lessons = _job_batch(memory)
    services.lesson_update(lesson=lessons[0], actor=services.Actor.for_user(curator), text="Changed later")
    html = client_for(curator).post(url(batch), HTTP_HX_REQUEST="true").content.decode()
    assert "changed again after this" in html and 'role="alert"' in html
    assert all(
        lesson.status == LessonStatus.ACTIVE for lesson in [type(lessons[0]).objects.get(pk=x.pk) for x in lessons]
    )
