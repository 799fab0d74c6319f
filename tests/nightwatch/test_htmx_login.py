"""An htmx request without a session is sent to the login page as a whole page, back to where the user was."""

import pytest

from tests.factories import make_lesson

pytestmark = pytest.mark.django_db


def test_htmx_post_without_session_gets_a_client_redirect_to_login(client, memory):
    lesson = make_lesson(memory, "Keep it")
    response = client.post(
        f"/lessons/{lesson.pk}/delete/",
        HTTP_HX_REQUEST="true",
        HTTP_HX_CURRENT_URL="http://testserver/promotions/?memory=3",
    )
    assert response.status_code == 200
    assert response["HX-Redirect"] == "/accounts/login/?next=%2Fpromotions%2F%3Fmemory%3D3"
    lesson.refresh_from_db()
    assert lesson.status == "active"


def test_current_url_of_another_site_is_not_used(client):
    response = client.get("/", HTTP_HX_REQUEST="true", HTTP_HX_CURRENT_URL="https://evil.example/phish")
    assert response["HX-Redirect"] == "/accounts/login/?next=%2F"


def test_plain_requests_keep_the_usual_redirect(client):
    response = client.get("/promotions/")
    assert response.status_code == 302 and response["Location"] == "/accounts/login/?next=/promotions/"


def test_htmx_requests_with_a_session_are_left_alone(client_for, curator, memory):
    lesson = make_lesson(memory, "Drop it")
    response = client_for(curator).post(
        f"/lessons/{lesson.pk}/delete/", HTTP_HX_REQUEST="true", HTTP_HX_CURRENT_URL="http://testserver/"
    )
    assert response.status_code == 200 and "HX-Redirect" not in response
    lesson.refresh_from_db()
    assert lesson.status == "deleted"
