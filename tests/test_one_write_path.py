"""Only the write path (memory/history/) creates or updates Lesson, LessonRef and Change rows.

History, revert and refs rely on every such write going through the one write path (which records
the change and bumps the version); other code calls it through memory/services.py. This reads every
module of the product with `ast` and fails, naming file and line, when one outside memory/history/
writes those rows:
- a write method of the model's manager or queryset (`Lesson.objects.filter(...).update(...)`),
  or of a related manager that holds them (`lesson.refs.create(...)`, `batch.changes.update(...)`);
- a new instance (`Lesson(...)`), which can only be meant for saving;
- `.save()` on a name bound to one of them (`lesson.save()`, `ref.save(...)`);
- raw SQL that inserts into or updates their tables;
- raw SQL that inserts into, updates or copies into a table given by an expression (a model's
  `_meta.db_table`, a helper's table argument): a generic writer keyed on a table writes these
  tables as easily as any, so only the write path keeps one (memory/history/rows.py);
- an import of the write path's raw row writers (memory/history/rows.py).
Deletes are left to the models' own rules (no automated path hard-deletes a lesson).
"""

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("memory", "personas", "nightwatch")
THE_WRITE_PATH = ROOT / "memory" / "history"

MODELS = {"Lesson", "LessonRef", "Change"}
WRITES = {"create", "bulk_create", "bulk_update", "update", "get_or_create", "update_or_create", "add", "set", "remove"}
# Related managers whose rows are lessons, refs or changes (see the related_name of memory/models/core.py).
RELATED = {"lessons", "refs", "changes", "derived_from", "derivatives", "supersedes"}
# Names that hold a lesson, ref or change in this code base, for `.save()`.
INSTANCE_NAMES = re.compile(r"^(lesson|ref|change|core)(_.*)?$|.*_lesson$")
TABLES = re.compile(r"\b(INSERT\s+INTO|UPDATE)\s+\"?memory_(lesson|lessonref|change)\b", re.I)
# SQL text with the parts filled in at run time as `{}` (see _sql_text); a table named by one of them.
_TABLE_GIVEN = r"[\"`]?(\{\w*\}|%s|%\(\w+\)s)[\"`]?"
GENERIC_WRITES = [
    re.compile(rf"\b(INSERT\s+(OR\s+\w+\s+)?INTO|REPLACE\s+INTO)\s+{_TABLE_GIVEN}", re.I),
    re.compile(rf"\bUPDATE\s+(ONLY\s+)?{_TABLE_GIVEN}\s+(AS\s+\w+\s+|\w+\s+)?SET\b", re.I),
    re.compile(rf"\bCOPY\s+{_TABLE_GIVEN}[^;]*?\bFROM\b", re.I),
]
RAW_WRITERS = "memory.history.rows"


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


def _sql_text(node):
    """The text of a string literal, f-string or `+` chain of strings, each part filled in at run
    time written `{}`; None for other nodes."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(part.value if isinstance(part, ast.Constant) else "{}" for part in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _sql_text(node.left), _sql_text(node.right)
        if left is not None or right is not None:
            return ("{}" if left is None else left) + ("{}" if right is None else right)
    return None


def _raw_sql_writes(node):
    text = _sql_text(node)
    if text is None:
        return []
    if TABLES.search(text):
        return ["raw SQL writing " + TABLES.search(text).group(0)]
    return [
        f"raw SQL writing a table named by an expression: {pattern.search(text).group(0)}"
        for pattern in GENERIC_WRITES
        if pattern.search(text)
    ][:1]


def _imports_raw_writers(node):
    if isinstance(node, ast.ImportFrom):
        module = node.module or ""
        return module == RAW_WRITERS or any(f"{module}.{alias.name}" == RAW_WRITERS for alias in node.names)
    return isinstance(node, ast.Import) and any(alias.name == RAW_WRITERS for alias in node.names)


def writes_in(source, filename="<source>"):
    """[(line, what)] of every write of Lesson, LessonRef or Change rows in this module's source."""
    tree = ast.parse(source, filename)
    aliases = _model_aliases(tree)
    found = []
    for node in ast.walk(tree):
        for what in _raw_sql_writes(node):
            if (node.lineno, what) not in found:
                found.append((node.lineno, what))
        if _imports_raw_writers(node):
            found.append((node.lineno, f"import of {RAW_WRITERS}, the write path's raw row writers"))
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
            if "migrations" in path.parts or path.is_relative_to(THE_WRITE_PATH):
                continue
            yield path


def test_only_the_write_path_writes_lessons_refs_and_history():
    offences = [
        f"{path.relative_to(ROOT)}:{line}: {what}"
        for path in _modules()
        for line, what in writes_in(path.read_text(), str(path))
    ]
    assert not offences, "Write these through memory/services.py (memory/history/):\n" + "\n".join(offences)


def test_the_write_path_itself_writes_them():
    # The check reads the code the way it is written: the write path's modules trip the rules.
    found = [what for path in sorted(THE_WRITE_PATH.rglob("*.py")) for _, what in writes_in(path.read_text())]
    assert len(found) >= 5
    assert any(what.startswith("raw SQL writing a table named by") for what in found)


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
        # Generic raw SQL keyed on a model's table, or on a table a helper is given.
        "sql = f'INSERT INTO {Model._meta.db_table} (text) VALUES (%s)'",
        "cursor.execute(f'UPDATE {qn(model._meta.db_table)} SET {assignments} WHERE id = %s', rows)",
        "def write(table, rows):\n    cursor.executemany(f'INSERT OR REPLACE INTO \"{table}\" VALUES (%s)', rows)",
        "cursor.execute('INSERT INTO %s (text) VALUES (%%s)' % table, [text])",
        "cursor.execute('UPDATE ' + table + ' SET text = %s', [text])",
        "cursor.execute(SQL('insert into {} (text) values (%s)').format(Identifier(table)), [text])",
        "cursor.execute('UPDATE {table} AS t SET text = %s'.format(table=name), [text])",
        "cursor.copy(f'COPY {table} (text) FROM STDIN')",
        "from memory.history.rows import RowInserter",
        "from memory.history import rows",
        "import memory.history.rows",
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
        "sql = f'SELECT id FROM {qn(Lesson._meta.db_table)} WHERE id = %s'",
        "cursor.copy(f'COPY {table} (text) TO STDOUT')",
        "sql = f'INSERT INTO scratch_lesson (text) SELECT text FROM {source}'",
        "sql = f'INSERT INTO t (a) VALUES (%s) ON CONFLICT (a) DO UPDATE SET {assignments}'",
        "label = f'Update {lesson.pk} before you insert it'",
        "from memory.history.snapshots import lesson_snapshot",
    ],
)
def test_reads_and_other_models_pass(source):
    assert not writes_in(source)
