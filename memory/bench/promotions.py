"""Benchmark: promotion detection over 10,000 working lessons in one memory, scored and timed.

The memory is generated with known answers planted in it:
- recurring lessons: a theme (six key words and a file) restated on 3 or 4 dates, each restatement
  using four of the key words among everyday filler, so no two restatements read alike;
- decoys: a lesson citing a theme's file and two of its key words but saying something else
  (other specific words), on another date;
- themes seen on only 2 dates, and themes repeated three times on one day (not promotable);
- one-off lessons for the rest.
Filler words follow a Zipf law, as words in real text do. Detection is scored with the same four
measures as `eval_promotions` and timed through the service (load + detection + storing).

Run alone with `python -m memory.bench.promotions` (a throw-away SQLite database unless
DATABASE_URL is set), or through `make bench`.
"""

import random
import time
from datetime import date, timedelta

from memory.bench import benchmark

LESSONS = 10_000
RECURRING_THEMES = 400
BUDGET_SECONDS = 2.0
_SEED = 7


def _word(rng):
    return "".join(rng.choice("bcdfghjklmnprstvwz") + rng.choice("aeiou") for _ in range(rng.randint(2, 4)))


def generate(n=LESSONS, recurring=RECURRING_THEMES, seed=_SEED):
    """[(text, path, day, theme or None)] for n lessons with `recurring` planted recurring themes."""
    rng = random.Random(seed)
    vocab = sorted({_word(rng) for _ in range(12_000)})
    rng.shuffle(vocab)
    filler, specific = vocab[:3_000], vocab[3_000:]
    # Zipf from rank 20 on: the top of a real Zipf curve is stop words, which analysis removes.
    zipf = [1.0 / (rank + 20) for rank in range(len(filler))]
    start = date(2025, 1, 1)

    def day():
        return start + timedelta(days=rng.randrange(365))

    def sentence(keys, k_filler):
        words = list(keys) + rng.choices(filler, weights=zipf, k=k_filler)
        rng.shuffle(words)
        return " ".join(words).capitalize()

    lessons = []
    two_date, same_day = recurring // 4, recurring // 4
    for t in range(recurring + two_date + same_day):
        keys = rng.sample(specific, 6)
        path = f"src/{rng.choice(specific)}/{rng.choice(specific)}.py"
        theme = f"theme-{t}"
        if t < recurring:
            days = rng.sample(range(365), rng.choice((3, 3, 4)))
            dates = [start + timedelta(days=d) for d in days]
        elif t < recurring + two_date:
            dates = [start + timedelta(days=d) for d in rng.sample(range(365), 2)]
        else:
            dates = [day()] * 3
        for when in dates:
            lessons.append((sentence(rng.sample(keys, 4), rng.randint(6, 10)), path, when, theme))
        if t < recurring:  # a decoy: same file, two key words, another point
            other = rng.sample(specific, 3)
            lessons.append((sentence(rng.sample(keys, 2) + other, rng.randint(6, 10)), path, day(), None))
    while len(lessons) < n:
        lessons.append(
            (sentence(rng.sample(specific, 3), rng.randint(7, 12)), f"src/misc/{rng.choice(specific)}.py", day(), None)
        )
    rng.shuffle(lessons)
    return lessons[:n]


def _make_memory():
    from memory.services import memory_get_or_create
    from personas.models import Persona, Project

    persona, _ = Persona.objects.get_or_create(name="Bench Persona", defaults={"role": "Implementer"})
    project, _ = Project.objects.get_or_create(slug="bench-promotions", defaults={"name": "Bench promotions"})
    return memory_get_or_create(persona=persona, project=project)


def seed_lessons(memory, n=LESSONS, recurring=RECURRING_THEMES):
    """Store the generated lessons; returns {lesson id: theme or None}."""
    from django.db import transaction

    from memory import services
    from memory.models import ChangeBatch
    from memory.refs import Ref

    generated = generate(n, recurring)
    # Bulk insert: the benchmark measures detection, not 10,000 single writes.
    with transaction.atomic():
        batch = services.batch_create(memory=memory, kind=ChangeBatch.Kind.IMPORT, actor=services.Actor.system("bench"))
        created = services.lessons_bulk_create(
            [
                services.NewLesson(batch.pk, memory.pk, "working", "OBSERVATION", text, when, i, refs=[Ref(path)])
                for i, (text, path, when, _) in enumerate(generated)
            ]
        )
    ChangeBatch.objects.filter(memory=memory).delete()
    return {pk: (theme, when) for pk, (_, _, when, theme) in zip(created, generated)}


def _scores(labels, candidates, threshold):
    from memory.promotions.evaluation import CorpusLesson, CorpusMemory, score

    lessons = [
        CorpusLesson(id=pk, key=str(pk), text="", day=when, category="", refs=[], theme=theme)
        for pk, (theme, when) in labels.items()
    ]
    memory = CorpusMemory(name="bench", threshold=threshold, holdout=False, lessons=lessons)
    return score(memory, [sorted(c.supporting.values_list("id", flat=True)) for c in candidates])


def measure(n=LESSONS, recurring=RECURRING_THEMES):
    """A dict of figures: quality of the candidates and seconds for the detection service."""
    from memory.models import PromotionCandidate
    from memory.promotions.services import promotion_detect

    memory = _make_memory()
    memory.lessons.all().delete()
    PromotionCandidate.objects.filter(memory=memory).delete()
    labels = seed_lessons(memory, n, recurring)
    try:
        t0, c0 = time.perf_counter(), time.process_time()
        result = promotion_detect(memory=memory)
        t1, c1 = time.perf_counter(), time.process_time()
        again = promotion_detect(memory=memory)
        t2 = time.perf_counter()
        candidates = list(PromotionCandidate.objects.filter(memory=memory).prefetch_related("supporting"))
        sizes = [len(c.supporting.all()) for c in candidates]
        scores = _scores(labels, candidates, memory.promotion_threshold)
        return {
            "lessons": n,
            "candidates": len(candidates),
            "largest_candidate": max(sizes, default=0),
            "fewest_dates": min((c.distinct_dates for c in candidates), default=0),
            **{k: v for k, v in scores.as_dict().items() if k != "candidates"},
            "detect_seconds": round(t1 - t0, 3),
            "detect_cpu_seconds": round(c1 - c0, 3),
            "rerun_seconds": round(t2 - t1, 3),
            "rerun_created": len(again.created),
            "created": len(result.created),
        }
    finally:
        memory.persona.delete()  # the bench data goes with its persona; nothing is left behind


@benchmark("promotions", "Promotion detection on 10,000 working lessons with planted recurring lessons")
def bench_promotions(bench):
    figures = measure(bench.scaled(LESSONS, minimum=200), bench.scaled(RECURRING_THEMES, minimum=10))
    n = figures["lessons"]
    bench.figure(
        f"detection, {n:,} working lessons (load, detect, store)",
        figures["detect_seconds"],
        unit="s",
        target=BUDGET_SECONDS,
        cpu=figures["detect_cpu_seconds"],
    )
    bench.figure("detection re-run, nothing new", figures["rerun_seconds"], unit="s")
    bench.figure("candidates", figures["candidates"], unit="candidates")
    for key, label in (
        ("candidate_precision", "candidate precision"),
        ("theme_recall", "theme recall"),
        ("pair_precision", "pair precision"),
        ("pair_recall", "pair recall"),
    ):
        bench.figure(label, figures[key], unit="")
    bench.figure("largest candidate", figures["largest_candidate"], unit="lessons", target=12)
    bench.note(f"fewest distinct dates on a candidate: {figures['fewest_dates']} (the rule asks for 3)")
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
    ok = figures["detect_seconds"] <= BUDGET_SECONDS
    print("OK" if ok else f"SLOW: over the {BUDGET_SECONDS}s budget")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(_standalone())
