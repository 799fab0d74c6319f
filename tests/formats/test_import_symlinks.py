"""import_memory does not follow symbolic links unless asked: a linked file or folder could pull any
file on the machine into memory served to agents. Each skipped link is reported."""

import pytest

from memory.models import Lesson
from personas.models import Persona
from tests.formats.conftest import write_tree

pytestmark = pytest.mark.django_db

OUTSIDE = "- [PATTERN] A line from outside the tree\n- [DECISION] Another outside line\n"


@pytest.fixture
def outside(tmp_path):
    target = write_tree(tmp_path / "outside", {"secret.md": OUTSIDE, "Eve/memories/app/core.md": OUTSIDE})
    return target


def test_a_linked_memory_file_is_skipped_and_reported(tmp_path, outside, run_command):
    root = write_tree(tmp_path / "tree", {"Dev/memories/app/working.md": "- [OBSERVATION] Inside the tree\n"})
    (root / "Dev/memories/app/core.md").symlink_to(outside / "secret.md")
    out = run_command("import_memory", str(root))
    assert "Dev/memories/app/core.md: a symbolic link; skipped" in out
    assert list(Lesson.objects.values_list("text", flat=True)) == ["Inside the tree"]


def test_a_linked_persona_folder_is_skipped_and_reported(tmp_path, outside, run_command):
    root = write_tree(tmp_path / "tree", {"Dev/memories/app/working.md": "- [OBSERVATION] Inside the tree\n"})
    (root / "Eve").symlink_to(outside / "Eve", target_is_directory=True)
    out = run_command("import_memory", str(root))
    assert "Eve: a symbolic link; skipped" in out
    assert not Persona.objects.filter(name="Eve").exists()
    assert Lesson.objects.count() == 1


def test_linked_workspace_files_and_folders_are_skipped(tmp_path, outside, run_command):
    root = write_tree(tmp_path / "ws", {"Dev/app/MEMORY.md": "- Inside the tree\n"})
    (root / "Dev/app/TOOLS.md").symlink_to(outside / "secret.md")
    (root / "Dev/app/.learnings").symlink_to(outside, target_is_directory=True)
    out = run_command("import_memory", "--layout", "workspace", str(root))
    assert "Dev/app/TOOLS.md: a symbolic link; skipped" in out
    assert "Dev/app/.learnings: a symbolic link; skipped" in out
    assert list(Lesson.objects.values_list("text", flat=True)) == ["Inside the tree"]


def test_follow_symlinks_reads_them(tmp_path, outside, run_command):
    root = write_tree(tmp_path / "tree", {"Dev/memories/app/working.md": "- [OBSERVATION] Inside the tree\n"})
    (root / "Dev/memories/app/core.md").symlink_to(outside / "secret.md")
    out = run_command("import_memory", "--follow-symlinks", str(root))
    assert "symbolic link" not in out
    assert Lesson.objects.filter(tier="core").count() == 2
