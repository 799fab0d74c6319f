"""Benchmark: conflict detection over 10,000 and 100,000 lessons, full passes and a 50-lesson batch.

The lessons are generated with known conflicts planted among them:
- everyday lessons: two or three subject words drawn from a large vocabulary among filler words that
  follow a Zipf law (as words in real text do), and now and then a tool of a family (npm, jest,
  redis …), a counted value ("30 seconds"), a runtime version ("Node 20") or a path;
- planted pairs: the same subject (one rare word and two of the memory's most common filler words,
  which a pair shares without a rarer word only through its subject) given two different values on
  two dates: another tool of the family, another number, another version or another path.
Detection is timed through the service (load, detect, store) on one memory of each size and on the
larger size spread over ten memories; then a batch of 50 lessons (a quarter of them conflicting
with a planted lesson) goes into the large memory and the incremental pass after it is timed in CPU
seconds. Promotion detection over the same large memory is timed in the same run for comparison.

Run alone with `python -m memory.bench.conflicts` (a throw-away SQLite database unless
DATABASE_URL is set), or through `make bench` (`--only conflicts`).
"""

import random
import time
from datetime import date, timedelta

from memory.bench import benchmark

SMALL, LARGE = 10_000, 100_000
BATCH = 50
GROWTH_TARGET = 11  # ×, for ten times the lessons
INCREMENTAL_CPU_TARGET = 1.0  # s
MEMORIES_ACROSS = 10
_SEED = 11

_TOOLS = {
    "package manager": ["npm", "pnpm", "yarn"],
    "test runner": ["jest", "vitest", "mocha"],
    "cache": ["redis", "memcached", "valkey"],
    "queue": ["celery", "dramatiq", "rq"],
    "bundler": ["webpack", "vite", "esbuild"],
}
_RUNTIMES = ["node", "python", "postgres", "ubuntu", "django"]
_UNITS = ["seconds", "minutes", "retries", "requests", "MB", "days"]
_VERBS = ["builds with", "is tested with", "caches through", "queues jobs through", "is bundled by"]


def _word(rng):
    return "".join(rng.choice("bcdfghjklmnprstvwz") + rng.choice("aeiou") for _ in range(rng.randint(2, 4)))


class _Vocabulary:
    def __init__(self, rng, n):
        # The vocabulary grows with the text, as it does in real writing (Heaps' law): a memory ten
        # times larger names more things, not only the same things more often.
        size = 6_000 + int(40 * n**0.75)
        words = sorted({_word(rng) for _ in range(size)})
        rng.shuffle(words)
        self.filler, self.specific = words[:3_000], words[3_000:]
        # Zipf from rank 20 on: the top of a real Zipf curve is stop words, which analysis removes.
        self.zipf = [1.0 / (rank + 20) for rank in range(len(self.filler))]
        self.rng = rng

    def fillers(self, k):
        return self.rng.choices(self.filler, weights=self.zipf, k=k)


def _sentence(rng, words):
    words = list(words)
    rng.shuffle(words)
    return " ".join(words)


def _everyday(rng, vocab):
    words = rng.sample(vocab.specific, rng.randint(2, 3)) + vocab.fillers(rng.randint(5, 9))
    text = _sentence(rng, words).capitalize()
    roll = rng.random()
    if roll < 0.15:
        family = rng.choice(list(_TOOLS))
        text += f", with {rng.choice(_TOOLS[family])}"
    elif roll < 0.3:
        text += f" after {rng.randint(2, 90)} {rng.choice(_UNITS)}"
    elif roll < 0.38:
        text += f" on {rng.choice(_RUNTIMES).capitalize()} {rng.randint(10, 22)}"
    elif roll < 0.5:
        text += f" in src/{rng.choice(vocab.specific)}/{rng.choice(vocab.specific)}.py"
    return text + "."


def _planted(rng, vocab, k):
    """Two texts giving one subject two values: (older, newer, kind)."""
    subject = [rng.choice(vocab.specific), *rng.sample(vocab.filler[:40], 2)]
    head = " ".join(subject).capitalize()
    kind = ("tool", "number", "version", "path")[k % 4]
    if kind == "tool":
        family = rng.choice(list(_TOOLS))
        old, new = rng.sample(_TOOLS[family], 2)
        verb = _VERBS[list(_TOOLS).index(family)]
        return f"{head} {verb} {old}.", f"{head} now {verb} {new}.", kind
    if kind == "number":
        unit = rng.choice(_UNITS)
        old, new = rng.sample(range(2, 90), 2)
        return f"{head} is capped at {old} {unit}.", f"{head} is now capped at {new} {unit}.", kind
    if kind == "version":
        runtime = rng.choice(_RUNTIMES).capitalize()
        old, new = rng.sample(range(10, 22), 2)
        return f"{head} runs on {runtime} {old}.", f"{head} runs on {runtime} {new}.", kind
    name = rng.choice(vocab.specific)
    a, b = rng.sample(vocab.specific, 2)
    return f"{head} settings are in src/{a}/{name}.py.", f"{head} settings moved to lib/{b}/{name}.py.", kind


def generate(n, *, seed=_SEED, planted=None, batch=BATCH):
    """(lessons, batch): lessons as [(text, day, label)] for n lessons, label = ("old" | "new", pair
    number) on planted conflicts; batch as [(text, day, label)], a quarter of it the newer side of a
    conflict with a lesson of `lessons` planted alone (label ("new", pair number))."""
    rng = random.Random(seed)
    vocab = _Vocabulary(rng, n)
    planted = n // 100 if planted is None else planted
    start = date(2025, 1, 1)
    lessons: list[tuple[str, date, tuple[str, int] | None]] = []
    for k in range(planted):
        older, newer, _ = _planted(rng, vocab, k)
        first = rng.randrange(300)
        lessons.append((older, start + timedelta(days=first), ("old", k)))
        lessons.append((newer, start + timedelta(days=first + rng.randint(1, 60)), ("new", k)))
    later: list[tuple[str, date, tuple[str, int] | None]] = []
    for k in range(planted, planted + batch // 4):
        older, newer, _ = _planted(rng, vocab, k)
        lessons.append((older, start + timedelta(days=rng.randrange(360)), ("old", k)))
        later.append((newer, start + timedelta(days=400), ("new", k)))
    while len(lessons) < n:
        lessons.append((_everyday(rng, vocab), start + timedelta(days=rng.randrange(365)), None))
    rng.shuffle(lessons)
    while len(later) < batch:
        later.append((_everyday(rng, vocab), start + timedelta(days=400), None))
    return lessons[:n], later


def _memories(name, count):
    from memory.services import memory_get_or_create
    from personas.models import Persona, Project

    # A name of its own each run: a scratch database may keep an earlier run's lessons.
    stamp = time.strftime("%Y%m%d-%H%M%S")
    project, _ = Project.objects.get_or_create(slug="bench-conflicts", defaults={"name": "Bench conflicts"})
    return [
        memory_get_or_create(
            persona=Persona.objects.create(name=f"Bench conflicts {name} {stamp} {k}", role="Implementer"),
            project=project,
        )
        for k in range(count)
    ]


def seed(memory, lessons):
    """Store [(text, day, label)] in the memory (one in ten core); returns {lesson id: label}."""
    from django.db import transaction

    from memory import services
    from memory.models import ChangeBatch

    with transaction.atomic():
        batch = services.batch_create(memory=memory, kind=ChangeBatch.Kind.IMPORT, actor=services.Actor.system("bench"))
        created = services.lessons_bulk_create(
            [
                services.NewLesson(
                    batch.pk,
                    memory.pk,
                    "core" if i % 10 == 9 else "working",
                    "DECISION" if i % 10 == 9 else "OBSERVATION",
                    text,
                    day,
                    i,
                )
                for i, (text, day, _) in enumerate(lessons)
            ]
        )
    return {pk: label for pk, (_, _, label) in zip(created, lessons)}


def _score(memories_labels):
    """(planted pairs found, planted pairs, other conflicts found) over the memories."""
    from memory.models import LessonConflict

    found = planted = other = 0
    for memory, labels in memories_labels:
        planted += sum(1 for label in labels.values() if label and label[0] == "new")
        for older, newer in LessonConflict.objects.filter(memory=memory).values_list("older_id", "newer_id"):
            a, b = labels.get(older), labels.get(newer)
            if a and b and a[1] == b[1] and (a[0], b[0]) == ("old", "new"):
                found += 1
            else:
                other += 1
    return found, planted, other


def _timed(func):
    cpu, wall = time.process_time(), time.perf_counter()
    result = func()
    return result, time.perf_counter() - wall, time.process_time() - cpu


def full_pass(n, memories=1, batch=BATCH):
    """Seed n lessons over `memories` memories and run a full pass over each: a dict of figures."""
    from memory.conflicts.services import conflicts_detect

    targets = _memories(f"{n}x{memories}", memories)
    stored = []
    for k, memory in enumerate(targets):
        lessons, later = generate(n // memories, seed=_SEED + k, batch=batch)
        stored.append((memory, seed(memory, lessons), later))
    _, wall, cpu = _timed(lambda: [conflicts_detect(memory=memory) for memory in targets])
    found, planted, other = _score([(memory, labels) for memory, labels, _ in stored])
    return {"wall": wall, "cpu": cpu, "found": found, "planted": planted, "other": other, "stored": stored}


def incremental_pass(memory, labels, batch):
    """Add the batch to the memory and run the pass after it: a dict of figures."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from memory.conflicts.services import conflicts_detect
    from memory.models import LessonConflict

    added = seed(memory, batch)
    labels.update(added)
    before = LessonConflict.objects.filter(memory=memory).count()
    with CaptureQueriesContext(connection) as queries:
        (created, _), wall, cpu = _timed(lambda: conflicts_detect(memory=memory, lesson_ids=list(added)))
    found = 0
    for older, newer in LessonConflict.objects.filter(memory=memory, newer_id__in=list(added)).values_list(
        "older_id", "newer_id"
    ):
        a, b = labels.get(older), labels.get(newer)
        found += bool(a and b and a[1] == b[1])
    planted = sum(1 for label in added.values() if label)
    return {
        "wall": wall,
        "cpu": cpu,
        "queries": len(queries),
        "created": created,
        "found": found,
        "planted": planted,
        "conflicts_before": before,
    }


def promotion_pass(memory):
    from memory.promotions.services import promotion_detect

    _, wall, cpu = _timed(lambda: promotion_detect(memory=memory))
    return {"wall": wall, "cpu": cpu}


@benchmark("conflicts", "Conflict detection at 10,000 and 100,000 lessons, full and after a 50-lesson batch")
def bench_conflicts(bench):
    small, large = bench.scaled(SMALL, minimum=200), bench.scaled(LARGE, minimum=2_000)
    batch = bench.scaled(BATCH, minimum=8) if bench.scale < 1 else BATCH
    figures = {}
    for n in (small, large):
        figures[n] = result = full_pass(n, batch=batch)
        bench.figure(f"full pass, {n:,} lessons in one memory", result["wall"], unit="s", cpu=result["cpu"])
        bench.note(
            f"{n:,} lessons: {result['found']} of {result['planted']} planted conflicts found,"
            f" {result['other']} other conflicts"
        )
    growth = max(figures[large]["cpu"], 1e-6) / max(figures[small]["cpu"], 1e-6)
    bench.figure(f"full pass growth (CPU), {small:,} → {large:,} lessons", growth, unit="×", target=GROWTH_TARGET)

    memory, labels, later = figures[large]["stored"][0]
    step = incremental_pass(memory, labels, later)
    bench.figure(
        f"incremental pass, {batch} new lessons into {large:,} (CPU)",
        step["cpu"],
        unit="s",
        target=INCREMENTAL_CPU_TARGET,
    )
    bench.figure(f"incremental pass, {batch} new lessons into {large:,} (wall)", step["wall"], unit="s")
    bench.note(
        f"incremental pass: {step['queries']} queries, {step['found']} of {step['planted']} planted conflicts"
        f" with the batch found, {step['created']} conflicts created"
    )

    promotion = promotion_pass(memory)
    bench.figure(f"promotion detection, {large + batch:,} lessons", promotion["wall"], unit="s", cpu=promotion["cpu"])
    bench.figure(
        "conflicts full pass ÷ promotion detection (CPU)",
        figures[large]["cpu"] / max(promotion["cpu"], 1e-6),
        unit="×",
        target=1,
    )
    bench.figure(
        "conflicts incremental pass ÷ promotion detection (CPU)",
        step["cpu"] / max(promotion["cpu"], 1e-6),
        unit="×",
        target=1,
    )

    across = full_pass(large, memories=MEMORIES_ACROSS, batch=batch)
    bench.figure(
        f"full pass, {large:,} lessons over {MEMORIES_ACROSS} memories", across["wall"], unit="s", cpu=across["cpu"]
    )
    bench.note(
        f"over {MEMORIES_ACROSS} memories: {across['found']} of {across['planted']} planted conflicts found,"
        f" {across['other']} other conflicts"
    )
    memory, labels, later = across["stored"][0]
    step = incremental_pass(memory, labels, later)
    bench.figure(
        f"incremental pass, {batch} new lessons into 1 of {MEMORIES_ACROSS} memories (CPU)",
        step["cpu"],
        unit="s",
        target=INCREMENTAL_CPU_TARGET,
    )
    bench.figure(
        f"incremental pass, {batch} new lessons into 1 of {MEMORIES_ACROSS} memories (wall)", step["wall"], unit="s"
    )
    return {"full": {n: {k: v for k, v in f.items() if k != "stored"} for n, f in figures.items()}, "growth": growth}
