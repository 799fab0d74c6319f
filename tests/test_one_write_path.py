"""Only memory/services.py creates or updates Lesson, LessonRef and Change rows.

History, revert and refs rely on every such write going through the one write path (which records
the change and bumps the version). This reads every module of the product with `ast` and fails,
naming file and line, when one outside memory/services.py writes those rows:
- a write method of the model's manager or queryset (`Lesson.objects.filter(...).update(...)`),
  or of a related manager that holds them (`lesson.refs.create(...)`, `batch.changes.update(...)`);
- a new instance (`Lesson(...)`), which can only be meant for saving;
- `.save()` on a name bound to one of them (`lesson.save()`, `ref.save(...)`);
- raw SQL that inserts into or updates their tables.
Deletes are left to the models' own rules (no automated path hard-deletes a lesson).
"""

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("memory", "personas", "nightwatch")
THE_WRITE_PATH = ROOT / "memory" / "services.py"

MODELS = {"Lesson", "LessonRef", "Change"}
WRITES = {"create", "bulk_create", "bulk_update", "update", "get_or_create", "update_or_create", "add", "set", "remove"}
# Related managers whose rows are lessons, refs or changes (see the related_name of memory/models/core.py).
RELATED = {"lessons", "refs", "changes", "derived_from", "derivatives", "supersedes"}
# Names that hold a lesson, ref or change in this code base, for `.save()`.
INSTANCE_NAMES = re.compile(r"^(lesson|ref|change|core)(_.*)?$|.*_lesson$")
TABLES = re.compile(r"\b(INSERT\s+INTO|UPDATE)\s+\"?memory_(lesson|lessonref|change)\b", re.I)


def _root_name(node):
    """The name a chain of attributes and calls starts from, and the attribute names along it."""
    names = []
    while True:
        if isinstance(node, ast.Call):
            node = node.func
        elif isinstance(node, ast.Attribute):
            names.append(node.attr)
            node = node.value
        elif isinstance(node, ast.Subscript):
            node = node.value
        else:
            return (node.id if isinstance(node, ast.Name) else None), names[::-1]


def _model_aliases(tree):
    """Local names of Lesson, LessonRef and Change in a module (imports may rename them)."""
    aliases = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("memory.models"):
            for alias in node.names:
                if alias.name in MODELS:
                    aliases[alias.asname or alias.name] = alias.name
    return aliases


def writes_in(source, filename="<source>"):
    """[(line, what)] of every write of Lesson, LessonRef or Change rows in this module's source."""
    tree = ast.parse(source, filename)
    aliases = _model_aliases(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and TABLES.search(node.value):
            found.append((node.lineno, "raw SQL writing " + TABLES.search(node.value).group(0)))
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name) and func.id in aliases:
            found.append((node.lineno, f"new {aliases[func.id]} instance"))
            continue
        if not isinstance(func, ast.Attribute):
            continue
        root, names = _root_name(func)
        method = func.attr
        if method in WRITES:
            if root in aliases and ("objects" in names or "derived_from" in names):
                found.append((node.lineno, f"{aliases[root]}.{'.'.join(names)}()"))
            elif RELATED & set(names[:-1]):
                found.append((node.lineno, f"{root}.{'.'.join(names)}()"))
        elif method == "save" and root and len(names) == 1 and INSTANCE_NAMES.match(root):
            found.append((node.lineno, f"{root}.save()"))
    return found


def _modules():
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "migrations" in path.parts or path == THE_WRITE_PATH:
                continue
            yield path


def test_only_the_write_path_writes_lessons_refs_and_history():
    offences = [
        f"{path.relative_to(ROOT)}:{line}: {what}"
        for path in _modules()
        for line, what in writes_in(path.read_text(), str(path))
    ]
    assert not offences, "Write these through memory/services.py:\n" + "\n".join(offences)


def test_the_write_path_itself_writes_them():
    # The check reads the code the way it is written: the services module trips every rule.
    assert len(writes_in(THE_WRITE_PATH.read_text())) >= 5


@pytest.mark.parametrize(
    "source",
    [
        "from memory.models import Lesson\nLesson.objects.filter(pk=1).update(text='x')",
        "from memory.models import LessonRef as R\nR.objects.bulk_create([])",
        "from memory.models import Change\nChange(batch=None)",
        "lesson.refs.create(path='a.py')",
        "batch.changes.filter(x=1).update(reverted_by=None)",
        "memory.lessons.create(text='x')",
        "lesson.save(update_fields=['text'])",
        "from memory.models import Lesson\nLesson.derived_from.through.objects.bulk_create([])",
        "sql = 'INSERT INTO memory_lesson (text) VALUES (%s)'",
        "cursor.execute('UPDATE \"memory_change\" SET after = 1')",
    ],
)
def test_each_kind_of_write_is_caught(source):
    assert writes_in(source)


@pytest.mark.parametrize(
    "source",
    [
        "from memory.models import Lesson\nLesson.objects.filter(pk=1).values_list('id')",
        "from memory.models import PromotionCandidate\nPromotionCandidate.objects.filter(pk=1).update(status='x')",
        "candidate.save(update_fields=['status'])",
        "counts.update({1: 2})",
        "sql = 'SELECT id FROM memory_lesson'",
    ],
)
def test_reads_and_other_models_pass(source):
    assert not writes_in(source)
