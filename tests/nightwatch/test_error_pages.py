"""The product's own 403, 404 and 500 pages, and the favicon every page links."""

import pytest
from django.test import Client
from django.urls import path

from memory.roles import approver_required

pytestmark = pytest.mark.django_db


def test_404_is_the_product_page_for_every_unknown_address(client_for, viewer):
    client = client_for(viewer)
    for url in ("/no/such/page/", "/lessons/999999/history/", "/promotions/999999/", "/refinement/runs/999999/"):
        response = client.get(url)
        assert response.status_code == 404, url
        html = response.content.decode()
        assert "This page does not exist" in html and 'href="/"' in html, url
        assert 'aria-label="Main"' in html  # the usual menu, so the user is not stranded


def test_403_says_which_role_is_missing(client_for, viewer, memory):
    response = client_for(viewer).post("/promotions/detect/", {"memory": memory.pk})
    assert response.status_code == 403
    html = response.content.decode()
    assert "Your account cannot do this" in html and "approver role" in html


def _boom(request):
    raise RuntimeError("broken on purpose")


urlpatterns = [path("boom/", approver_required(_boom))]


@pytest.mark.urls("tests.nightwatch.test_error_pages")
def test_500_page_renders_without_a_request(approver):
    client = Client(raise_request_exception=False)
    client.force_login(approver)
    response = client.get("/boom/")
    assert response.status_code == 500
    html = response.content.decode()
    assert "Something went wrong on our side" in html and "favicon.svg" in html


def test_every_page_links_the_favicon_and_favicon_ico_redirects_to_it(client_for, viewer):
    html = client_for(viewer).get("/").content.decode()
    assert '<link rel="icon" href="/static/img/favicon.svg" type="image/svg+xml">' in html
    response = client_for(viewer).get("/favicon.ico")
    assert response.status_code == 301 and response["Location"] == "/static/img/favicon.svg"
