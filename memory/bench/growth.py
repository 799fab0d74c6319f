"""How the costs that grow with the data grow: import, compile and promotion detection at 0.1×, 1× and 10×.

Linear growth is the goal: ten times the data should cost at most about ten times as much (compile
reads only what its budgets hold, so it should hardly grow at all). Every size runs in the same
process, one after the other, and growth is the ratio of CPU times (wall time on a shared machine
also counts the waits for a core); wall times are printed beside them. Import and detection take
the median of REPEAT runs at every size: one run of the small sizes lasts well under a second, so
a single one moved a growth figure by a tenth or more from run to run. The 10× sizes are the
headline figures of the `files` and `promotions` benchmarks (100,000 bullets; 10,000 lessons).
"""

from itertools import pairwise

from memory.bench import benchmark
from memory.bench.files import generate_tree
from memory.bench.promotions import seed_lessons
from memory.formats.importer import memory_import_tree
from memory.formats.nightwatch import read_tree
from memory.models import Memory
from memory.promotions.services import promotion_detect
from memory.selectors import compile_memory
from memory.services import Actor, memory_get_or_create
from personas.models import Persona, Project

FACTORS = (0.1, 1, 10)
GROWTH_TARGET = 12  # ×, for ten times the data: linear, with room for a busy machine
DETECTION_GROWTH_TARGET = 11  # ×: detection's pair scoring must stay close to linear too
REPEAT = 3


def _import_seconds(bench, factor, actor):
    memories = bench.scaled(50 * factor)
    projects = min(memories, 10)
    trees, sizes = [], []

    def setup():  # a new tree each run (importing one again would add nothing)
        src = bench.tmpdir / f"import-{factor}-{len(trees)}"
        _, bullets = generate_tree(
            src,
            personas=max(1, memories // projects),
            projects=projects,
            core_per_memory=20,
            working_per_memory=180,
            persona=f"Growth import {factor} run {len(trees)}",
        )
        trees.append(src)
        sizes.append(bullets)

    seconds = bench.time(lambda: memory_import_tree(tree=read_tree(trees[-1]), actor=actor), repeat=REPEAT, setup=setup)
    return sizes[0], seconds, bench.last_cpu


def _compile_seconds(bench, factor, actor):
    src = bench.tmpdir / f"compile-{factor}"
    lessons = bench.scaled(1_000 * factor)
    name = f"Growth compile {factor}"
    generate_tree(
        src,
        personas=1,
        projects=1,
        core_per_memory=max(1, lessons // 10),
        working_per_memory=lessons - max(1, lessons // 10),
        seed=7,
        persona=name,
    )
    memory_import_tree(tree=read_tree(src), actor=actor)
    memory = Memory.objects.get(persona__name=f"{name} 000")
    compile_memory(memory)
    seconds = bench.time(lambda: compile_memory(memory), repeat=15)
    return lessons, seconds, bench.last_cpu


def _detect_seconds(bench, factor):
    lessons = bench.scaled(1_000 * factor)
    persona = Persona.objects.create(name=f"Growth detection {factor}", role="Implementer")
    project, _ = Project.objects.get_or_create(slug="bench-growth", defaults={"name": "Bench growth"})
    memory = memory_get_or_create(persona=persona, project=project)
    seed_lessons(memory, n=lessons, recurring=max(1, lessons // 25))  # the 10k bench has 400 themes
    seconds = bench.time(lambda: promotion_detect(memory=memory), repeat=REPEAT)
    cpu = bench.last_cpu
    persona.delete()
    return lessons, seconds, cpu


@benchmark("growth", "Growth of import, compile and promotion detection from 0.1× to 10× the data")
def run(bench):
    actor = Actor.system("bench")
    measures = (
        ("import", "bullets", lambda f: _import_seconds(bench, f, actor), "s", 1, GROWTH_TARGET),
        ("compile", "lessons", lambda f: _compile_seconds(bench, f, actor), "ms", 1000, GROWTH_TARGET),
        ("promotion detection", "lessons", lambda f: _detect_seconds(bench, f), "s", 1, DETECTION_GROWTH_TARGET),
    )
    for name, items, measure, unit, to_unit, target in measures:
        cpus = []
        for factor in FACTORS:
            size, seconds, cpu = measure(factor)
            cpus.append(max(cpu, 1e-6))
            bench.figure(f"{name}, {factor:g}× ({size:,} {items})", seconds * to_unit, unit=unit, cpu=cpu * to_unit)
        for (small, large), (c_small, c_large) in zip(pairwise(FACTORS), pairwise(cpus)):
            bench.figure(
                f"{name} growth (CPU), {small:g}× → {large:g}× the data",
                c_large / c_small,
                unit="×",
                target=target if large == FACTORS[-1] else None,
            )
    bench.note("linear growth is 10× for ten times the data; compile is bounded by its budgets")
