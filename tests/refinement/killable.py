"""Run as a separate process by test_crash.py: `python -m tests.refinement.killable <step> [args]`.

Works on its own SQLite file (SQLITE_PATH), so a SIGKILL hits a real process with real commits.
"""

import json
import os
import sys
import threading

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "nightwatch.settings")

import django

django.setup()

from django.core.management import call_command  # noqa: E402

from memory.models import Lesson, RefinementRun  # noqa: E402


def dump(memory_id):
    lessons = sorted(
        Lesson.objects.filter(memory_id=memory_id).values_list("id", "text", "tier", "status", "protected")
    )
    runs = list(RefinementRun.objects.filter(memory_id=memory_id).values("id", "status", "error"))
    ops = list(RefinementRun.objects.filter(memory_id=memory_id).values_list("operations__outcome", flat=True))
    return {"lessons": lessons, "runs": runs, "op_outcomes": ops}


def main(step, *args):
    if step == "setup":
        if "--migrate" in args:  # else the file is a copy of the test database, schema included
            call_command("migrate", verbosity=0)
        from tests.factories import MemoryFactory, make_lesson

        memory = MemoryFactory()
        for i in range(20):
            make_lesson(
                memory,
                f"Lesson {i}: service {i} keeps its config in config/service_{i}.toml",
                tier="core",
                category="PATTERN",
            )
        print(json.dumps({"memory_id": memory.pk, **dump(memory.pk)}), flush=True)
    elif step == "run":
        from memory.refinement.services import refinement_run_create, refinement_run_execute
        from tests.refinement.scripted import ScriptedEngine

        memory_id = int(args[0])
        ids = list(Lesson.objects.filter(memory_id=memory_id).order_by("id").values_list("id", flat=True))

        def report(call, result):
            print(json.dumps({"op": call.name, "error": result.is_error}), flush=True)
            if call.name == "delete":
                threading.Event().wait()  # hang here, mid-run, until killed

        engine = ScriptedEngine(
            [("delete", {"id": ids[0]}), ("delete", {"id": ids[1]}), ("complete", {})], after_call=report
        )
        run = refinement_run_create(memory=__import__("memory.models").models.Memory.objects.get(pk=memory_id))
        refinement_run_execute(run_id=run.pk, engine=engine)
    elif step == "sweep":
        from memory.refinement.services import refinement_sweep

        swept = refinement_sweep(timeout=0)
        print(json.dumps({"swept": swept, **dump(int(args[0]))}), flush=True)
    elif step == "dump":
        print(json.dumps(dump(int(args[0]))), flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:])
