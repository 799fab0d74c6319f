"""The wiring convention of the code base (README, "Where things go"), checked on the code itself.

- No import cycles between the product's modules, not even through imports inside functions: a
  slice's tasks import its services, never the other way round (services queue work by task name,
  memory/jobs.py), and the history core (memory/history/, named by memory/services.py) imports no
  feature slice (slices register on memory/signals.py instead).
- Every Celery task is named memory.<slice>.<verb>, and the beat schedule names registered tasks.
- Signals are declared in memory/signals.py only, and receivers live in receivers.py modules.
"""

import ast
import re
from pathlib import Path

from celery import current_app
from django.conf import settings

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("memory", "personas")


def _modules():
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            found[name.removesuffix(".__init__")] = path
    return found


def _imports(name, path, modules):
    """Product modules `name` imports anywhere in its file (module level or inside functions)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            targets = [f"{base}.{alias.name}" for alias in node.names] + [base]
        else:
            continue
        for target in targets:
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def _graph():
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def _cycles(graph):
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index, low, on_stack, stack, cycles, counter = {}, {}, set(), [], [], 0
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph.get(nxt, ())))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        cycles.append(sorted(component))
    return cycles


def test_no_import_cycles_even_inside_functions():
    assert _cycles(_graph()) == []


def test_the_cycle_check_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_services_never_import_tasks():
    # Views may queue a job they start themselves (a button that writes nothing); services never do.
    graph = _graph()
    offenders = [
        (name, dep)
        for name, deps in graph.items()
        for dep in deps
        if not name.endswith((".tasks", "memory.apps"))
        and ".views" not in name
        and (dep.endswith(".tasks") or dep == "memory.tasks")
    ]
    assert offenders == []


# transaction.on_commit( … task.delay( … ), the callback written over one or several lines.
ON_COMMIT_DELAY = re.compile(r"on_commit\((?:(?!\)\n).){0,300}?\.(delay|apply_async)\(", re.DOTALL)


def test_work_queued_after_a_write_goes_through_enqueue_on_commit():
    # A view (or anything else) that queues a task once its writes commit does it with
    # memory.jobs.enqueue_on_commit("memory.<slice>.<verb>", …), by the task's name, as services do,
    # not with its own transaction.on_commit around a task's .delay(). (A button that writes nothing
    # may still call .delay() itself: see test_services_never_import_tasks.)
    offenders = [
        name for name, path in _modules().items() if name != "memory.jobs" and ON_COMMIT_DELAY.search(path.read_text())
    ]
    assert offenders == []


def test_the_history_core_imports_no_feature_slice():
    slices = {"api", "compaction", "formats", "lessons", "mcp", "pipeline", "promotions", "refinement", "reflection"}
    graph = _graph()
    core = [name for name in graph if name == "memory.services" or name.startswith("memory.history")]
    assert "memory.history.snapshots" in core
    imported = {dep.split(".")[1] for name in core for dep in graph[name] if dep.count(".") >= 1}
    assert not imported & slices
    # memory.refs.parsing (the ref syntax) is shared; the refs slice's services are reached by signal.
    assert not [name for name in core if "memory.refs.services" in graph[name]]


def test_tasks_are_named_by_slice_and_verb_and_beat_names_real_tasks():
    from memory.tasks import FORMER_NAMES

    ours = [
        name
        for name in current_app.tasks
        if name.startswith(("memory", "promotions", "refinement", "refs")) and name not in FORMER_NAMES
    ]
    assert ours and all(name.count(".") == 2 and name.startswith("memory.") for name in ours), ours
    assert set(FORMER_NAMES.values()) <= set(ours)
    for entry in settings.CELERY_BEAT_SCHEDULE.values():
        assert entry["task"] in ours


def test_a_message_queued_under_a_former_name_still_runs(db):
    assert current_app.tasks["refinement.sweep"].delay().get() == current_app.tasks["memory.refinement.sweep"]()


def test_signals_live_in_one_module_and_receivers_in_receivers_modules():
    for name, path in _modules().items():
        source = path.read_text()
        if name != "memory.signals":
            assert "dispatch.Signal(" not in source, name
        if not name.endswith((".receivers", "memory.apps", "memory.context_cache")):
            # A signal's connect names its receiver; a Redis client's own connect() takes nothing, a
            # socket's takes an address tuple, and sqlite3.connect opens the import bench's scratch database.
            assert not re.search(r"(?<!sqlite3)\.connect\(\s*[^)\s(]", source) and "@receiver(" not in source, name
