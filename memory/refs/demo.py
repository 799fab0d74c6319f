"""Demo data for ref checking: a small git repository behind the Storefront API project, whose
second commit moves, renames, edits and deletes code under a few demo lessons' refs.

Called by `manage.py seed_demo`. The repository is written under DEMO_CHECKOUT_DIR, and only for a
project without a checkout of its own; it is rebuilt when its project has never been checked (a
fresh database), so a second run changes nothing.
"""

from pathlib import Path

from django.conf import settings

from memory.models import LessonRef, RefCheck
from memory.refs.scratch import ScratchRepo
from memory.refs.services import refs_check_project
from personas.models import Project

SLUG = "storefront-api"
_COMMENT = {".ts": "//", ".js": "//", ".prisma": "//", ".py": "#", ".json": ""}


def _line(path, i):
    suffix = Path(path).suffix
    if suffix == ".json":
        return f'  "key{i}": "value {i}",'
    prefix = _COMMENT.get(suffix, "#")
    return f"{prefix} {Path(path).stem}: step {i}".strip()


def _files(project):
    """Every file the project's demo lessons point at, long enough for their ranges."""
    lengths = {}
    for path, start, end in LessonRef.objects.filter(lesson__memory__project=project).values_list(
        "path", "start_line", "end_line"
    ):
        lengths[path] = max(lengths.get(path, 0), (end or start or 0) + 12)
    return dict(sorted(lengths.items()))


def _drift(repo, project):
    """Insert above some refs (moved), rename a file (moved), edit and delete others (stale)."""
    refs = list(
        LessonRef.objects.filter(lesson__memory__project=project, start_line__isnull=False)
        .order_by("path", "start_line")
        .values_list("path", "start_line", "end_line")
        .distinct()
    )
    paths = list(dict.fromkeys(path for path, _, _ in refs))
    inserted, renamed, edited, deleted = paths[0:3], paths[3:4], paths[4:6], paths[6:7]
    for path in inserted:
        repo.insert_lines(path, 1, [_line(path, 0), "", _line(path, -1)])
    for path in renamed:
        repo.move(path, path.replace("src/", "src/core/", 1) if path.startswith("src/") else f"moved/{path}")
    for path in edited:
        start = next(s for p, s, _ in refs if p == path)
        repo.replace_line(path, start, _line(path, start) + " (rewritten)")
    for path in deleted:
        repo.delete(path)
    repo.commit("Refactor: move, rename and rewrite a few modules")


def seed(stdout):
    project = Project.objects.filter(slug=SLUG).first()
    if project is None or RefCheck.objects.filter(project=project).exists():
        return
    where = Path(settings.DEMO_CHECKOUT_DIR) / SLUG
    if project.checkout_path and Path(project.checkout_path) != where:
        return  # a real checkout: never write to it
    files = _files(project)
    if not files:
        return
    if where.exists():
        import shutil

        shutil.rmtree(where)
    repo = ScratchRepo(where, branch=project.repository_ref or "main")
    for path, lines in files.items():
        repo.write(path, "".join(_line(path, i) + "\n" for i in range(1, lines + 1)))
    repo.commit("Storefront API as the demo lessons knew it")
    project.checkout_path = str(where)
    project.save(update_fields=["checkout_path"])
    refs_check_project(project=project)  # anchors every ref at the first commit
    _drift(repo, project)
    check = refs_check_project(project=project)
    found = ", ".join(f"{n} {status}" for status, n in sorted(check.counts.items()))
    stdout.write(f"Demo repository for {project.name} at {where}: {found}\n")
