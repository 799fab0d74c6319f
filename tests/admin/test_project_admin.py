"""Projects in the admin: counts, and no delete that would take memory along."""

import pytest
from django.urls import reverse

from personas.models import Project
from tests.factories import MemoryFactory, ProjectFactory, make_lesson

URL = reverse("admin:personas_project_changelist")


@pytest.mark.django_db
def test_list_counts_memories_and_lessons(admin_client, django_assert_num_queries):
    project = ProjectFactory(name="Storefront", repository_url="https://github.com/acme/storefront")
    make_lesson(MemoryFactory(project=project), "one")
    make_lesson(MemoryFactory(project=project), "two")
    response = admin_client.get(URL)
    row = response.context["cl"].result_list[0]
    assert (row.n_memories, row.n_lessons) == (2, 2)
    assert 'href="https://github.com/acme/storefront"' in response.content.decode()
    for i in range(10):
        make_lesson(MemoryFactory(project=ProjectFactory()), f"more {i}")
    # session, user, the teams of the Team filter, one count (no full count), the page, and one sum of the
    # lesson counts its projects' memories keep, with how many memories
    with django_assert_num_queries(6):
        admin_client.get(URL)


@pytest.mark.django_db
def test_a_project_with_memory_cannot_be_deleted(admin_client):
    project = ProjectFactory()
    make_lesson(MemoryFactory(project=project), "precious")
    assert (
        admin_client.post(reverse("admin:personas_project_delete", args=[project.pk]), {"post": "yes"}).status_code
        == 403
    )
    assert Project.objects.filter(pk=project.pk).exists()
    assert 'value="delete_selected"' not in admin_client.get(URL).content.decode()


@pytest.mark.django_db
def test_an_empty_project_can_be_deleted(admin_client):
    project = ProjectFactory()
    response = admin_client.post(reverse("admin:personas_project_delete", args=[project.pk]), {"post": "yes"})
    assert response.status_code == 302
    assert not Project.objects.filter(pk=project.pk).exists()
