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


def _promotion(persona, approver):
    from tests.memory.test_revert_dependencies import promoted

    batch, _ = promoted(persona, services.Actor.for_user(approver))
    return batch


def test_a_change_others_depend_on_is_reverted_with_them_and_says_so(client_for, approver, persona):
    from django.contrib.messages import get_messages

    batch = _promotion(persona, approver)
    create = batch.changes.get(action=Change.Action.CREATE)
    response = client_for(approver).post(url(create))
    assert response.status_code == 302
    (message,) = [str(m) for m in get_messages(response.wsgi_request)]
    assert message == (
        f"Change #{create.pk} reverted, together with the 3 changes of Promotion #{batch.pk} "
        "that would otherwise have lost their knowledge."
    )
    assert set(batch.memory.lessons.filter(tier="working").values_list("status", flat=True)) == {LessonStatus.ACTIVE}


def test_a_refused_revert_offers_the_whole_batch_when_it_can_go(client_for, approver, persona):
    from tests.memory.test_revert_dependencies import refined

    batch, _ = refined(persona)
    update = batch.changes.get(action=Change.Action.UPDATE)  # the same run protected that lesson afterwards
    html = client_for(approver).post(url(update), HTTP_HX_REQUEST="true").content.decode()
    assert "was changed again after this" in html and f"Refinement #{batch.pk} can still be reverted" in html
    assert f'action="/batches/{batch.pk}/revert/"' in html and "Revert the whole batch" in html
    assert not batch.changes.filter(reverted_by__isnull=False).exists()
    client_for(approver).post(f"/batches/{batch.pk}/revert/")
    batch.refresh_from_db()
    assert batch.reverted_by is not None


def test_a_refused_revert_offers_no_batch_that_would_be_refused_too(client_for, approver, persona):
    batch = _promotion(persona, approver)
    create = batch.changes.get(action=Change.Action.CREATE)
    services.lesson_update(lesson=create.lesson, actor=services.Actor.for_user(approver), text="Edited in core")
    html = client_for(approver).post(url(create), HTTP_HX_REQUEST="true").content.decode()
    assert "was changed again after this" in html and "Revert the whole batch" not in html
    assert not batch.changes.filter(reverted_by__isnull=False).exists()
