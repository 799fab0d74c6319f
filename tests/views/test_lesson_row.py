from tests.views.conftest import assert_login_redirect


def test_anonymous_goes_to_login(client, lesson):
    assert_login_redirect(client.get(f"/lessons/{lesson.pk}/"))


def test_htmx_returns_the_row(client_for, viewer, lesson):
    html = client_for(viewer).get(f"/lessons/{lesson.pk}/", HTTP_HX_REQUEST="true").content.decode()
    assert f'id="lesson-{lesson.pk}"' in html and "<html" not in html
    assert "Delete" not in html


def test_full_page_redirects_to_the_memory(client_for, viewer, lesson):
    response = client_for(viewer).get(f"/lessons/{lesson.pk}/")
    assert response.status_code == 302
    assert response["Location"] == lesson.memory.get_absolute_url() + f"#lesson-{lesson.pk}"


def test_htmx_row_returns_to_the_page_the_browser_is_on(client_for, curator, lesson):
    page = f"http://testserver/memories/{lesson.memory_id}/?tier=core"
    html = (
        client_for(curator)
        .get(f"/lessons/{lesson.pk}/", HTTP_HX_REQUEST="true", HTTP_HX_CURRENT_URL=page)
        .content.decode()
    )
    assert f'value="{page.replace("&", "&amp;")}#lesson-{lesson.pk}"' in html
    html = client_for(curator).get(f"/lessons/{lesson.pk}/", HTTP_HX_REQUEST="true").content.decode()
    assert f'value="{lesson.memory.get_absolute_url()}#lesson-{lesson.pk}"' in html
