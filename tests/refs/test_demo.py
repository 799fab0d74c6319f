"""seed_demo gives ref checking something to show: a small git repository with moved and stale refs."""

import io
from pathlib import Path

import pytest
from django.core.management import call_command

from memory.access import EVERY_MEMORY
from memory.models import RefCheck
from memory.refs.selectors import refs_needing_review_count
from personas.models import Project

pytestmark = pytest.mark.django_db


def test_the_demo_project_has_a_checkout_with_moved_and_stale_refs(settings):
    out = io.StringIO()
    call_command("seed_demo", stdout=out)

    project = Project.objects.get(slug="storefront-api")
    assert Path(project.checkout_path) == Path(settings.DEMO_CHECKOUT_DIR) / "storefront-api"
    assert (Path(project.checkout_path) / ".git").is_dir()
    check = RefCheck.objects.filter(project=project).latest()
    assert check.error == ""
    assert check.counts["moved"] >= 3 and check.counts["changed"] >= 2 and check.counts["gone"] >= 1
    assert check.counts["valid"] > check.counts["moved"]
    assert sum(refs_needing_review_count(EVERY_MEMORY).values()) > 0
    assert "Demo repository for Storefront API" in out.getvalue()

    call_command("seed_demo", stdout=io.StringIO())  # a second run changes nothing
    assert RefCheck.objects.filter(project=project).count() == 2
