from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from memory.models import Lesson


def write_tree(root, files):
    """files: {"Persona/memories/slug/working.md": "text"} → written under root (UTF-8)."""
    root = Path(root)
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def tree_bytes(root):
    """{relative path: bytes} of every file under root, for exact comparisons."""
    root = Path(root)
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def stored_lessons(status=None):
    """Every lesson as comparable data: who, where, what — not ids or sections."""
    lessons = Lesson.objects.select_related("memory__persona", "memory__project").prefetch_related("refs")
    if status:
        lessons = lessons.filter(status=status)
    return sorted(
        (
            lesson.memory.persona.name,
            lesson.memory.persona.archived_at is not None,
            lesson.memory.project.slug,
            lesson.tier,
            lesson.category,
            lesson.text,
            tuple(r.as_text() for r in lesson.refs.all()),
            lesson.lesson_date.isoformat(),
            lesson.unparsed,
            lesson.raw_line,
            lesson.status,
        )
        for lesson in lessons
    )


@pytest.fixture
def run_command():
    def run(*args):
        out = StringIO()
        call_command(*args, stdout=out, stderr=StringIO())
        return out.getvalue()

    return run
