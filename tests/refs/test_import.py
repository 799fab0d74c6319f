"""Lessons imported from memory files get their refs anchored once the import commits."""

from io import StringIO

import pytest
from django.core.management import call_command

from memory.models import LessonRef
from memory.refs.models import RefStatus
from tests.formats.conftest import write_tree

pytestmark = pytest.mark.django_db


def test_imported_refs_are_anchored_after_the_import(tmp_path, repo, settings, django_capture_on_commit_callbacks):
    settings.PROJECT_CHECKOUT_ROOT = str(tmp_path)
    repo.path.rename(tmp_path / "night-watch-cli")  # <root>/<slug>: no checkout path needed on the project
    tree = write_tree(
        tmp_path / "agents",
        {
            "Maya/memories/night-watch-cli/working.md": "## 2025-01-31 [OBSERVATION]\n"
            "- [OBSERVATION] Auth checks the session (ref: src/auth/middleware.py#L3-L4)\n"
            "- [OBSERVATION] Far past the end (ref: src/auth/middleware.py#L90)\n\n",
        },
    )

    with django_capture_on_commit_callbacks(execute=True):
        call_command("import_memory", str(tree), stdout=StringIO())

    statuses = {r.as_text(): r.anchor.status for r in LessonRef.objects.select_related("anchor")}
    assert statuses == {
        "src/auth/middleware.py#L3-L4": RefStatus.VALID,
        "src/auth/middleware.py#L90": RefStatus.CHANGED,
    }
