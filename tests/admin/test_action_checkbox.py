"""The admin lists' row checkbox is written out by hand (memory.listing.PageCountsAdminMixin) for
speed; it must be exactly the HTML Django's own widget makes, or the admin's actions script and
screen readers would see something else."""

import pytest
from django.contrib import admin
from django.contrib.admin import ModelAdmin

from memory.listing import PageCountsAdminMixin
from personas.models import Persona
from tests.factories import PersonaFactory

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("name", ["Security Reviewer", "<b>\"Odd\" & 'quoted'</b>", "Ré­viseur 🛡"])
def test_the_same_html_as_djangos_widget(name):
    persona = PersonaFactory(name=name)
    model_admin = admin.site._registry[Persona]
    assert isinstance(model_admin, PageCountsAdminMixin)
    assert str(model_admin.action_checkbox(persona)) == str(ModelAdmin.action_checkbox(model_admin, persona))
    assert "<b>" not in str(model_admin.action_checkbox(persona))


def test_the_select_all_toggle_is_still_in_the_header(admin_client):
    PersonaFactory()
    html = admin_client.get("/admin/personas/persona/").content.decode()
    assert 'id="action-toggle"' in html and 'class="action-select"' in html
