"""Deleting a persona in the admin archives it; deleting for good needs the name typed on its own page."""

import pytest
from django.contrib.auth.models import Permission
from django.urls import reverse

from memory.models import Lesson, Memory
from personas import services
from personas.models import Persona
from tests.factories import MemoryFactory, PersonaFactory, make_lesson


@pytest.fixture
def persona_with_memory(db):
    persona = PersonaFactory(name="Maren")
    memory = MemoryFactory(persona=persona)
    make_lesson(memory, "Flaky test in the checkout suite.")
    make_lesson(memory, "Core rule about money.", tier="core", category="DECISION")
    return persona, memory


@pytest.mark.django_db
def test_delete_page_offers_archive_not_removal(admin_client, persona_with_memory):
    persona, _ = persona_with_memory
    response = admin_client.get(reverse("admin:personas_persona_delete", args=[persona.pk]))
    assert response.status_code == 200
    html = response.content.decode()
    assert "Archive Maren?" in html and "Yes, archive" in html


@pytest.mark.django_db
def test_delete_in_the_admin_archives_and_keeps_memory(admin_client, persona_with_memory):
    persona, memory = persona_with_memory
    response = admin_client.post(reverse("admin:personas_persona_delete", args=[persona.pk]), follow=True)
    assert "Archived “Maren”" in response.content.decode()
    persona.refresh_from_db()
    assert persona.is_archived
    assert Memory.objects.filter(pk=memory.pk).exists()
    assert Lesson.objects.filter(memory=memory).count() == 2


@pytest.mark.django_db
def test_restore_page_brings_it_back(admin_client, persona_with_memory):
    persona, memory = persona_with_memory
    services.persona_archive(persona=persona)
    url = reverse("admin:personas_persona_restore", args=[persona.pk])
    assert "Yes, restore" in admin_client.get(url).content.decode()
    admin_client.post(url)
    persona.refresh_from_db()
    assert not persona.is_archived
    assert Lesson.objects.filter(memory=memory).count() == 2


@pytest.mark.django_db
def test_change_page_links_to_hard_delete_only_when_archived(admin_client, persona_with_memory):
    persona, _ = persona_with_memory
    change = reverse("admin:personas_persona_change", args=[persona.pk])
    hard = reverse("admin:personas_persona_hard_delete", args=[persona.pk])
    assert hard not in admin_client.get(change).content.decode()
    services.persona_archive(persona=persona)
    assert hard in admin_client.get(change).content.decode()


@pytest.mark.django_db
def test_hard_delete_of_an_active_persona_is_refused(admin_client, persona_with_memory):
    persona, _ = persona_with_memory
    url = reverse("admin:personas_persona_hard_delete", args=[persona.pk])
    assert "is not archived" in admin_client.get(url).content.decode()
    response = admin_client.post(url, {"confirm_name": "Maren"})
    assert response.status_code == 400
    assert Persona.objects.filter(pk=persona.pk).exists()


@pytest.mark.django_db
def test_hard_delete_with_the_wrong_name_changes_nothing(admin_client, persona_with_memory):
    persona, memory = persona_with_memory
    services.persona_archive(persona=persona)
    url = reverse("admin:personas_persona_hard_delete", args=[persona.pk])
    page = admin_client.get(url).content.decode()
    assert "1 memory and 2 lessons" in page and "type the persona" in page
    for typed in ["", "maren", "Maren "[:-1] + "x"]:
        response = admin_client.post(url, {"confirm_name": typed})
        assert response.status_code == 400
        assert "did not match" in response.content.decode()
    assert Lesson.objects.filter(memory=memory).count() == 2


@pytest.mark.django_db
def test_hard_delete_with_the_typed_name_removes_everything(admin_client, persona_with_memory):
    persona, memory = persona_with_memory
    services.persona_archive(persona=persona)
    url = reverse("admin:personas_persona_hard_delete", args=[persona.pk])
    response = admin_client.post(url, {"confirm_name": "Maren"})
    assert response.status_code == 302
    assert not Persona.objects.filter(pk=persona.pk).exists()
    assert not Lesson.objects.filter(memory_id=memory.pk).exists()


@pytest.mark.django_db
def test_hard_delete_is_for_superusers_only(client, django_user_model, persona_with_memory):
    persona, _ = persona_with_memory
    services.persona_archive(persona=persona)
    staff = django_user_model.objects.create_user("staffer", password="pw-for-tests-1", is_staff=True)
    staff.user_permissions.add(*Permission.objects.filter(codename__in=["view_persona", "delete_persona"]))
    client.force_login(staff)
    url = reverse("admin:personas_persona_hard_delete", args=[persona.pk])
    assert client.post(url, {"confirm_name": "Maren"}).status_code == 403
    assert Persona.objects.filter(pk=persona.pk).exists()


@pytest.mark.django_db
def test_archive_restore_and_permanent_delete_are_logged(admin_client, persona_with_memory):
    from django.contrib.admin.models import LogEntry

    persona, _ = persona_with_memory
    admin_client.post(reverse("admin:personas_persona_delete", args=[persona.pk]))
    admin_client.post(reverse("admin:personas_persona_restore", args=[persona.pk]))
    services.persona_archive(persona=persona)
    url = reverse("admin:personas_persona_hard_delete", args=[persona.pk])
    admin_client.post(url, {"confirm_name": "wrong"})
    messages = list(
        LogEntry.objects.filter(object_id=str(persona.pk)).order_by("id").values_list("action_flag", "change_message")
    )
    assert [m for _, m in messages] == ["Archived (memory kept)", "Restored from the archive"]
    admin_client.post(url, {"confirm_name": "Maren"})
    assert LogEntry.objects.filter(object_id=str(persona.pk)).count() == 3
