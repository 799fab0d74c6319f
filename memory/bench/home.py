"""Benchmark: the home page of an organisation (500 memories, 100,000 lessons) against the demo data.

Home reads one page of memories and one aggregate of their lessons, so its time must not follow the
size of the organisation: the target is at most twice its time on the demo data. Lessons are
written through the write path's bulk insert (the figure is about reading them); the page is requested through Django's test
client as a superuser, the median of several runs.

Run alone with `python manage.py bench --only home` (a throw-away SQLite database unless
DATABASE_URL is set).
"""

from datetime import date, timedelta

from memory.bench import benchmark

MEMORIES = 500
LESSONS = 100_000
MAX_RATIO = 2.0


def _grow(memories, lessons):
    from django.db import transaction

    from memory import services
    from memory.models import ChangeBatch, Memory
    from personas.models import Persona, Project, Team

    team = Team.objects.get_or_create(slug="bench", defaults={"name": "Bench"})[0]
    personas = [Persona.objects.get_or_create(name=f"Bench agent {i}")[0] for i in range(20)]
    projects = [
        Project.objects.get_or_create(slug=f"bench-repo-{i}", defaults={"name": f"Bench repo {i}", "team": team})[0]
        for i in range((memories + 19) // 20)
    ]
    made = [
        Memory.objects.get_or_create(persona=personas[i % 20], project=projects[i // 20])[0]
        for i in range(max(0, memories - Memory.objects.count()))
    ]
    per_memory = max(1, lessons // max(1, len(made)))
    start = date(2025, 1, 1)
    actor = services.Actor.system("bench")
    with transaction.atomic():
        batches = services.batches_create(
            [services.batch_build(memory=m, kind=ChangeBatch.Kind.IMPORT, actor=actor) for m in made]
        )
        rows = []
        for memory, batch in zip(made, batches):
            for n in range(per_memory):
                text = f"Lesson {n} of memory {memory.pk}: src/module_{n % 40}.py keeps a cache per request"
                rows.append(
                    services.NewLesson(
                        batch_id=batch.pk,
                        memory_id=memory.pk,
                        tier="core" if n % 10 == 0 else "working",
                        category="PATTERN" if n % 10 == 0 else "OBSERVATION",
                        text=text,
                        lesson_date=start + timedelta(days=n % 300),
                        section=n,
                    )
                )
        services.lessons_bulk_create(rows)
        services.memories_bump_version([m.pk for m in made])
    return len(made), len(rows)


@benchmark("home", "Home page: 500 memories / 100,000 lessons against the demo data")
def run(bench):
    from django.contrib.auth.models import User
    from django.test import Client

    from memory.demo.seed import seed_demo

    class _Quiet:
        def write(self, *args, **kwargs):
            pass

    seed_demo(_Quiet())
    user = User.objects.filter(username="bench-boss").first() or User.objects.create_superuser("bench-boss")
    client = Client()
    client.force_login(user)

    def get():
        assert client.get("/").status_code == 200

    get()  # warm the caches and the templates
    demo = bench.time(get, repeat=7)
    bench.figure("home on the demo data", demo * 1000, unit="ms")
    memories, lessons = _grow(bench.scaled(MEMORIES, 30), bench.scaled(LESSONS, 3_000))
    get()
    large = bench.time(get, repeat=7)
    bench.figure(f"home with {memories} more memories, {lessons:,} more lessons", large * 1000, unit="ms")
    bench.figure("ratio to the demo data", large / demo, unit="×", target=MAX_RATIO)
