from memory.models import Change


def url(lesson):
    return f"/lessons/{lesson.pk}/protect/"


def test_get_is_405(client_for, curator, lesson):
    assert client_for(curator).get(url(lesson)).status_code == 405


def test_anonymous_goes_to_login(client, lesson):
    response = client.post(url(lesson), {"protected": "1"})
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_viewer_gets_403(client_for, viewer, lesson):
    assert client_for(viewer).post(url(lesson), {"protected": "1"}).status_code == 403
    lesson.refresh_from_db()
    assert not lesson.protected


def test_htmx_protect_and_unprotect(client_for, curator, lesson):
    client = client_for(curator)
    html = client.post(
        url(lesson), {"protected": "1", "reason": "foundational"}, HTTP_HX_REQUEST="true"
    ).content.decode()
    lesson.refresh_from_db()
    assert lesson.protected and "Unprotect" in html and "<html" not in html
    assert Change.objects.filter(lesson=lesson).first().batch.reason == "foundational"
    client.post(url(lesson), {"protected": "0"}, HTTP_HX_REQUEST="true")
    lesson.refresh_from_db()
    assert not lesson.protected


def test_full_page_redirects_with_message(client_for, curator, lesson):
    response = client_for(curator).post(url(lesson), {"protected": "1"}, follow=True)
    assert "Lesson protected." in response.content.decode()
