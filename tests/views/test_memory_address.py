"""A memory's readable address, /memories/<persona>/<project>/, and the old numeric one redirecting to it."""

import pytest

from personas.services import persona_rename
from tests.factories import MemoryFactory, PersonaFactory, ProjectFactory, make_lesson
from tests.views.conftest import assert_login_redirect

pytestmark = pytest.mark.django_db


@pytest.fixture
def named_memory():
    return MemoryFactory(persona=PersonaFactory(name="Sentinel Bot"), project=ProjectFactory(slug="checkout-api"))


def test_readable_address_opens_the_memory(client_for, viewer, named_memory):
    make_lesson(named_memory, "Sessions expire after 30 minutes", refs="src/auth/session.py#L8")
    assert named_memory.get_absolute_url() == "/memories/Sentinel%20Bot/checkout-api/"
    assert named_memory.history_url() == "/memories/Sentinel%20Bot/checkout-api/history/"
    assert named_memory.prompt_url() == "/memories/Sentinel%20Bot/checkout-api/prompt/"
    client = client_for(viewer)
    for url in (named_memory.get_absolute_url(), named_memory.history_url(), named_memory.prompt_url()):
        response = client.get(url)
        assert response.status_code == 200, url
        assert "Sentinel Bot" in response.content.decode()
    assert "Sessions expire after 30 minutes" in client.get(named_memory.get_absolute_url()).content.decode()


@pytest.mark.parametrize("suffix", ["", "history/", "prompt/"])
def test_old_numeric_address_redirects_permanently_keeping_the_query(client_for, viewer, named_memory, suffix):
    response = client_for(viewer).get(f"/memories/{named_memory.pk}/{suffix}?tier=core&q=a+b")
    assert response.status_code == 301
    assert response["Location"] == f"/memories/Sentinel%20Bot/checkout-api/{suffix}?tier=core&q=a+b"


def test_persona_name_in_other_case_redirects_to_the_current_spelling(client_for, viewer, named_memory):
    response = client_for(viewer).get("/memories/sentinel%20bot/checkout-api/history/")
    assert response.status_code == 302 and response["Location"] == named_memory.history_url()


def test_links_follow_a_rename(client_for, viewer, named_memory):
    old_numeric = f"/memories/{named_memory.pk}/"
    persona_rename(persona=named_memory.persona, new_name="Warden")
    named_memory.refresh_from_db()
    client = client_for(viewer)
    assert client.get(old_numeric)["Location"] == "/memories/Warden/checkout-api/"
    assert client.get("/memories/Warden/checkout-api/").status_code == 200
    # A readable link made before the rename follows the persona to its new name.
    moved = client.get("/memories/Sentinel%20Bot/checkout-api/history/?tier=core")
    assert moved.status_code == 302 and moved["Location"] == "/memories/Warden/checkout-api/history/?tier=core"


def test_unknown_names_are_404_with_the_product_page(client_for, viewer, named_memory):
    client = client_for(viewer)
    for url in ("/memories/Nobody/checkout-api/", "/memories/Sentinel%20Bot/no-such-project/", "/memories/999999/"):
        response = client.get(url)
        assert response.status_code == 404, url
        assert "This page does not exist" in response.content.decode()


def test_anonymous_goes_to_login(client, named_memory):
    assert_login_redirect(client.get(named_memory.get_absolute_url()))


def test_pages_link_the_readable_address(client_for, viewer, named_memory):
    html = client_for(viewer).get("/").content.decode()
    assert 'href="/memories/Sentinel%20Bot/checkout-api/"' in html
    html = client_for(viewer).get(named_memory.get_absolute_url()).content.decode()
    assert 'href="/memories/Sentinel%20Bot/checkout-api/history/"' in html
    assert 'href="/memories/Sentinel%20Bot/checkout-api/prompt/"' in html


def test_a_name_that_cannot_be_one_path_segment_keeps_the_numeric_address(client_for, viewer):
    memory = MemoryFactory(persona=PersonaFactory(name="QA/Security"), project=ProjectFactory(slug="web"))
    assert memory.get_absolute_url() == f"/memories/{memory.pk}/"
    response = client_for(viewer).get(memory.get_absolute_url())
    assert response.status_code == 200 and "QA/Security" in response.content.decode()
