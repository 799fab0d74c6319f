"""Benchmark: checking 10,000 lesson refs against a git repository of 2,000 files.

Three checks of the same refs: the first anchors every ref (each referenced file read once), the
second follows a commit that moves, renames, edits and deletes code under some of them, the third
finds nothing new (files untouched since a ref's commit are not read at all).
"""

import random

from memory.bench import benchmark

FILES = 2_000
LINES_PER_FILE = 120
REFS = 10_000
BUDGET_SECONDS = 10.0


def _seed(memory, files, n, rng):
    from django.db import transaction
    from django.utils import timezone

    from memory import services
    from memory.models import ChangeBatch
    from memory.refs import Ref

    today, lessons = timezone.localdate(), []
    with transaction.atomic():
        batch = services.batch_create(memory=memory, kind=ChangeBatch.Kind.IMPORT, actor=services.Actor.system("bench"))
        for i in range(n):
            path = rng.choice(files)
            start = rng.randint(1, LINES_PER_FILE - 5)
            end = start + rng.randint(0, 4)
            lessons.append(
                services.NewLesson(
                    batch.pk,
                    memory.pk,
                    "working",
                    "OBSERVATION",
                    f"Lesson {i} about {path}",
                    today,
                    i,
                    refs=[Ref(path, start, end if end != start else None)],
                )
            )
        # Bulk insert, as an import does: the benchmark measures the check, not 10,000 single writes.
        services.lessons_bulk_create(lessons)


def _drift(repo, files, rng):
    """One commit touching a tenth of the files: inserts above refs, edits, renames, deletions."""
    touched = rng.sample(files, len(files) // 10)
    quarter = len(touched) // 4
    for path in touched[:quarter]:
        repo.insert_lines(path, 1, ["# a new first line", "import os"])
    for path in touched[quarter : 2 * quarter]:
        for line in rng.sample(range(1, LINES_PER_FILE), 10):
            repo.replace_line(path, line, f"edited_{line} = True")
    for path in touched[2 * quarter : 3 * quarter]:
        repo.move(path, path.replace("src/", "lib/", 1))
    for path in touched[3 * quarter :]:
        repo.delete(path)
    return repo.commit("drift")


@benchmark("refs", "Checking 10,000 refs over a 2,000-file repository")
def bench_refs(bench):
    from memory.refs.scratch import ScratchRepo, numbered_source
    from memory.refs.services import refs_check_project
    from memory.services import memory_get_or_create
    from personas.models import Persona, Project

    rng = random.Random(16)
    n_files, n_refs = bench.scaled(FILES, 20), bench.scaled(REFS, 50)
    repo = ScratchRepo(bench.tmpdir / "checkout")
    files = [f"src/pkg{i % 40}/module_{i}.py" for i in range(n_files)]
    for i, path in enumerate(files):
        repo.write(path, numbered_source(f"m{i}", LINES_PER_FILE))
    repo.commit("first")

    persona, _ = Persona.objects.get_or_create(name="Bench Refs Persona", defaults={"role": "Implementer"})
    project, _ = Project.objects.update_or_create(
        slug="bench-refs", defaults={"name": "Bench refs", "checkout_path": str(repo.path), "repository_ref": "main"}
    )
    memory = memory_get_or_create(persona=persona, project=project)
    memory.lessons.all().delete()
    _seed(memory, files, n_refs, rng)

    checks = []
    seconds = bench.time(lambda: checks.append(refs_check_project(project=project)))
    bench.figure(
        f"first check: anchor {n_refs:,} refs over {n_files:,} files",
        seconds,
        unit="s",
        target=BUDGET_SECONDS,
        cpu=bench.last_cpu,
    )
    _drift(repo, files, rng)
    seconds = bench.time(lambda: checks.append(refs_check_project(project=project)))
    bench.figure(
        f"check after a commit touching {n_files // 10:,} files",
        seconds,
        unit="s",
        target=BUDGET_SECONDS,
        cpu=bench.last_cpu,
    )
    seconds = bench.time(lambda: checks.append(refs_check_project(project=project)))
    bench.figure("check again, nothing changed", seconds, unit="s", target=BUDGET_SECONDS, cpu=bench.last_cpu)
    for check in checks:
        if check.error:
            raise RuntimeError(f"ref check failed: {check.error}")
    found = ", ".join(f"{n:,} {status}" for status, n in sorted(checks[1].counts.items()))
    bench.note(f"after the drift commit: {found}")
    persona.delete()  # the bench data goes with its persona
    project.delete()
