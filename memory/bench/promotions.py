"""Benchmark: promotion detection over 10,000 working lessons in one memory.

Run alone with `python -m memory.bench.promotions` (uses a throw-away SQLite database unless
DATABASE_URL is set), or through the bench runner, which calls run(report).
"""

import random
import time
from datetime import date, timedelta

from memory.bench import benchmark

LESSONS = 10_000
THEMES = 1_500
BUDGET_SECONDS = 5.0

_VOCAB_SEED = 7
_COMMON = "always check service code team update change issue review test".split()


def _vocabulary(rng, n=6_000):
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = set()
    while len(words) < n:
        words.add("".join(rng.choice(letters) for _ in range(rng.randint(5, 10))))
    return sorted(words)


def _make_memory():
    from memory.services import memory_get_or_create
    from personas.models import Persona, Project

    persona, _ = Persona.objects.get_or_create(name="Bench Persona", defaults={"role": "Implementer"})
    project, _ = Project.objects.get_or_create(slug="bench-promotions", defaults={"name": "Bench promotions"})
    memory = memory_get_or_create(persona=persona, project=project)
    return memory


def seed_lessons(memory, n=LESSONS, themes=THEMES, seed=_VOCAB_SEED):
    """n working lessons: most belong to one of `themes` recurring themes (a few words in common and
    often the same file), the rest are one-offs; common words are sprinkled everywhere."""
    from memory.models import ChangeBatch, Lesson, LessonRef, content_hash

    rng = random.Random(seed)
    vocab = _vocabulary(rng)
    theme_words = [rng.sample(vocab, 5) for _ in range(themes)]
    theme_paths = [f"src/{rng.choice(vocab)}/{rng.choice(vocab)}.py" for _ in range(themes)]
    start = date(2025, 1, 1)
    lessons, ref_specs = [], []
    for i in range(n):
        if i % 5 == 4:  # one in five is a one-off
            words = rng.sample(vocab, 7)
            path = f"src/misc/{rng.choice(vocab)}.py"
        else:
            t = rng.randrange(themes)
            words = rng.sample(theme_words[t], 4) + rng.sample(vocab, 3)
            path = theme_paths[t]
        words += rng.sample(_COMMON, 3)
        rng.shuffle(words)
        text = " ".join(words).capitalize()
        lessons.append(
            Lesson(memory=memory, tier="working", category="OBSERVATION", text=text, content_hash=content_hash(text),
                   lesson_date=start + timedelta(days=rng.randrange(365)), section=i)
        )
        ref_specs.append(path)
    # Bulk insert: the benchmark measures detection, not 10,000 single writes.
    Lesson.objects.bulk_create(lessons, batch_size=2_000)
    created = list(Lesson.objects.filter(memory=memory).order_by("id"))
    LessonRef.objects.bulk_create(
        [LessonRef(lesson=lesson, path=path) for lesson, path in zip(created, ref_specs)], batch_size=2_000
    )
    ChangeBatch.objects.filter(memory=memory).delete()
    return created


def measure():
    """Returns a dict of figures: seconds for the grouping alone and for the whole detection service."""
    from memory.models import PromotionCandidate
    from memory.promotions import detection
    from memory.promotions.services import _load_facts, promotion_detect

    memory = _make_memory()
    memory.lessons.all().delete()
    PromotionCandidate.objects.filter(memory=memory).delete()
    seed_lessons(memory)

    t0 = time.perf_counter()
    facts, _ = _load_facts(memory)
    t1 = time.perf_counter()
    groups = detection.detect(facts, min_dates=memory.promotion_threshold)
    t2 = time.perf_counter()
    PromotionCandidate.objects.filter(memory=memory).delete()
    t3, c3 = time.perf_counter(), time.process_time()
    result = promotion_detect(memory=memory)
    t4, c4 = time.perf_counter(), time.process_time()
    again = promotion_detect(memory=memory)
    t5 = time.perf_counter()
    memory.persona.delete()  # the bench data goes with its persona; nothing is left behind
    return {
        "lessons": LESSONS,
        "groups": len(groups),
        "candidates_created": len(result.created),
        "load_seconds": round(t1 - t0, 3),
        "grouping_seconds": round(t2 - t1, 3),
        "detect_service_seconds": round(t4 - t3, 3),
        # CPU time of this process: less sensitive to other load on a shared machine.
        "detect_service_cpu_seconds": round(c4 - c3, 3),
        "rerun_seconds": round(t5 - t4, 3),
        "rerun_created": len(again.created),
        "budget_seconds": BUDGET_SECONDS,
    }


@benchmark("promotions", "Promotion detection on 10,000 working lessons")
def bench_promotions(bench):
    run(lambda name, value, unit, budget: bench.figure(name, value, unit=unit, target=budget))


def run(report):
    """Figures go out as report(name, value, unit, budget)."""
    figures = measure()
    rows = [
        ("promotion detection, 10k working lessons (wall)", figures["detect_service_seconds"], "s", BUDGET_SECONDS),
        ("promotion detection, 10k working lessons (CPU)", figures["detect_service_cpu_seconds"], "s", BUDGET_SECONDS),
        ("promotion grouping alone, 10k lessons", figures["grouping_seconds"], "s", None),
        ("promotion detection re-run, nothing new", figures["rerun_seconds"], "s", None),
        ("promotion candidates proposed", figures["candidates_created"], "candidates", None),
    ]
    for row in rows:
        report(*row)
    return figures


def _standalone():
    import os
    import tempfile

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "nightwatch.settings")
    if not os.environ.get("DATABASE_URL"):
        os.environ["SQLITE_PATH"] = os.path.join(tempfile.mkdtemp(prefix="nw-bench-"), "bench.sqlite3")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    figures = measure()
    for key, value in figures.items():
        print(f"{key:>24}: {value}")
    ok = figures["detect_service_seconds"] < BUDGET_SECONDS
    print("OK" if ok else f"SLOW: over the {BUDGET_SECONDS}s budget")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(_standalone())
