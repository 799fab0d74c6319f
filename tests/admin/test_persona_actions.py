"""Persona list actions: seed the defaults (with or without a selection), archive and restore."""

import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.urls import reverse

from personas import services
from personas.models import Persona
from tests.factories import MemoryFactory, PersonaFactory, make_lesson

URL = reverse("admin:personas_persona_changelist")


@pytest.mark.django_db
def test_seed_button_on_an_empty_list_creates_the_four_defaults(admin_client):
    page = admin_client.get(URL).content.decode()
    assert "Seed default personas" in page
    response = admin_client.post(reverse("admin:personas_persona_seed"), follow=True)
    assert Persona.objects.count() == 4
    assert "Created 4 default persona(s)" in response.content.decode()


@pytest.mark.django_db
def test_seed_button_is_post_only(admin_client):
    assert admin_client.get(reverse("admin:personas_persona_seed")).status_code == 405
    assert Persona.objects.count() == 0


@pytest.mark.django_db
def test_seed_action_runs_without_a_selection_and_is_idempotent(admin_client):
    PersonaFactory(name="Custom")
    response = admin_client.post(URL, {"action": "seed_default_personas", "index": "0"}, follow=True)
    assert "Created 4 default persona(s)" in response.content.decode()
    response = admin_client.post(URL, {"action": "seed_default_personas", "index": "0"}, follow=True)
    assert "nothing was created" in response.content.decode()
    assert Persona.objects.count() == 5


@pytest.mark.django_db
def test_other_actions_still_need_a_selection(admin_client):
    persona = PersonaFactory()
    response = admin_client.post(URL, {"action": "archive_selected", "index": "0"}, follow=True)
    assert "Items must be selected" in response.content.decode()
    persona.refresh_from_db()
    assert not persona.is_archived


@pytest.mark.django_db
def test_archive_and_restore_actions_keep_memory(admin_client):
    a, b = PersonaFactory(name="A1"), PersonaFactory(name="B1")
    memory = MemoryFactory(persona=a)
    make_lesson(memory)
    response = admin_client.post(URL, {"action": "archive_selected", ACTION_CHECKBOX_NAME: [a.pk, b.pk]}, follow=True)
    assert "Archived 2 persona(s): A1, B1" in response.content.decode()
    assert Persona.objects.filter(archived_at__isnull=False).count() == 2
    assert memory.lessons.count() == 1

    response = admin_client.post(
        URL + "?state=archived", {"action": "restore_selected", ACTION_CHECKBOX_NAME: [a.pk]}, follow=True
    )
    assert "Restored 1 persona(s): A1" in response.content.decode()
    a.refresh_from_db(), b.refresh_from_db()
    assert not a.is_archived and b.is_archived


@pytest.mark.django_db
def test_staff_without_add_permission_cannot_seed(client, django_user_model):
    staff = django_user_model.objects.create_user("staffer", password="pw-for-tests-1", is_staff=True)
    client.force_login(staff)
    assert client.post(reverse("admin:personas_persona_seed")).status_code == 403
    assert services.Persona.objects.count() == 0
