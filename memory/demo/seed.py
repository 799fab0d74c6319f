"""Load the demo: personas, projects and a few hundred lessons, all through the services.

Idempotent: personas and projects are matched by name and slug, and a memory that already holds
lessons is left alone, so a second run adds nothing.
"""

import importlib
import random
import sys
import zlib
from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from memory import services
from memory.demo import data
from memory.demo.bulk import bulk_working_lessons
from memory.models import ChangeBatch, Lesson, Tier
from personas.models import Persona, Project
from personas.services import personas_seed_defaults

# Features add their own demo content in `<module>.seed(stdout)`; missing modules are skipped.
DEMO_HOOKS = [
    "memory.promotions.demo",
    "memory.compaction.demo",
    "memory.refinement.demo",
    "memory.pipeline.demo",
    "memory.refs.demo",
]

ACTOR = services.Actor.system("demo data")
HISTORY_DAYS = 90
# The one memory whose working tier grows past the line limit, so compaction has work to propose.
OVERGROWN = ("Felix", "storefront-api")
OVERGROWN_EXTRA = 160


def _rng(*parts):
    return random.Random(zlib.crc32("/".join(parts).encode()))


def _specs_for(persona_name, slug, today):
    """Every lesson of one memory as dicts: core first (oldest promotions first), then working by date."""
    rng = _rng(persona_name, slug)
    core, working = [], []
    for tier, category, text, refs, relevance in data.LESSONS[slug].get(persona_name, []):
        if tier == Tier.CORE:
            day = today - timedelta(days=rng.randint(35, HISTORY_DAYS))
        else:
            day = today - timedelta(days=rng.randint(0, HISTORY_DAYS - 2))
        spec = {"tier": tier, "category": category, "text": text, "refs": refs, "relevance": relevance, "day": day}
        (core if tier == Tier.CORE else working).append(spec)
    for who, where, items in data.REPEATED_THEMES:
        if (who, where) == (persona_name, slug):
            for days_ago, text, refs in items:
                working.append(
                    {
                        "tier": Tier.WORKING,
                        "category": "OBSERVATION",
                        "text": text,
                        "refs": refs,
                        "relevance": "medium",
                        "day": today - timedelta(days=days_ago),
                    }
                )
    for group in (data.TRICKY, data.MARKDOWN):
        for who, where, text, refs in group:
            if (who, where) == (persona_name, slug):
                working.append(
                    {
                        "tier": Tier.WORKING,
                        "category": "OBSERVATION",
                        "text": text,
                        "refs": refs,
                        "relevance": "medium",
                        "day": today - timedelta(days=rng.randint(1, 60)),
                    }
                )
    if (persona_name, slug) == OVERGROWN:
        for category, text, ref, relevance in bulk_working_lessons(OVERGROWN_EXTRA):
            working.append(
                {
                    "tier": Tier.WORKING,
                    "category": category,
                    "text": text,
                    "refs": [ref],
                    "relevance": relevance,
                    "day": today - timedelta(days=rng.randint(0, HISTORY_DAYS - 2)),
                }
            )
    core.sort(key=lambda s: s["day"])
    working.sort(key=lambda s: s["day"])
    # The first core lesson and every critical one are protected, as a team lead would have done.
    for i, spec in enumerate(core):
        spec["protected"] = i == 0 or spec["relevance"] == "critical"
    for spec in working:
        spec["protected"] = spec["relevance"] == "critical"
    return core, working


@transaction.atomic
def seed_memory(memory, today):
    """Fill one empty memory. Returns the number of lessons created."""
    persona_name, slug = memory.persona.name, memory.project.slug
    core, working = _specs_for(persona_name, slug, today)
    batch = services.batch_create(
        memory=memory, kind=ChangeBatch.Kind.IMPORT, actor=ACTOR, label="Demo data", reason="seed_demo"
    )
    created = []
    section, last_day = 0, None
    for spec in core + working:
        if spec["tier"] == Tier.CORE or spec["day"] != last_day:
            section += 1
            last_day = spec["day"] if spec["tier"] == Tier.WORKING else None
        created.append(
            services.lesson_create(
                memory=memory,
                tier=spec["tier"],
                category=spec["category"],
                text=spec["text"],
                refs=spec["refs"],
                relevance=spec["relevance"],
                protected=spec["protected"],
                lesson_date=spec["day"],
                section=section,
                batch=batch,
                actor=ACTOR,
                bump=False,
            )
        )
    n = len(created)
    n += _seed_confirmed(memory, batch, today, section + 1)
    n += _seed_curation(memory, created, today, section + 2)
    services.memory_bump_version(memory)
    return n


def _seed_confirmed(memory, batch, today, section):
    """The lesson seen again on several days, in the one memory the demo data gives it to. Returns lessons created."""
    who, where, text, refs, days = data.CONFIRMED
    if (who, where) != (memory.persona.name, memory.project.slug):
        return 0
    lesson = services.lesson_create(
        memory=memory,
        category="OBSERVATION",
        text=text,
        refs=refs,
        lesson_date=today - timedelta(days=days[0]),
        section=section,
        batch=batch,
        actor=ACTOR,
        bump=False,
    )
    for d in days[1:]:
        services.lesson_confirm(lesson=lesson, confirmed_on=today - timedelta(days=d))
    return 1


def _seed_curation(memory, created, today, section):
    """What people did by hand: lessons superseded by later ones, low-value notes deleted. Returns lessons created."""
    persona_name, slug = memory.persona.name, memory.project.slug
    n = 0
    cleanup = services.batch_create(
        memory=memory,
        kind=ChangeBatch.Kind.MANUAL,
        actor=ACTOR,
        label="Demo: curation",
        reason="outdated or replaced lessons",
    )
    for who, where, old_start, new_text, new_refs in data.SUPERSEDED:
        if (who, where) != (persona_name, slug):
            continue
        old = next(lesson for lesson in created if lesson.text.startswith(old_start))
        replacement = services.lesson_create(
            memory=memory,
            category="OBSERVATION",
            text=new_text,
            refs=new_refs,
            relevance=old.relevance,
            lesson_date=today - timedelta(days=1),
            section=section,
            batch=cleanup,
            actor=ACTOR,
            bump=False,
        )
        services.lesson_supersede(
            lesson=old, superseded_by=replacement, actor=ACTOR, batch=cleanup, reason="replaced by a later lesson"
        )
        n += 1
    # A couple of low-value working notes were deleted by hand; they stay restorable.
    deletable = [
        lesson
        for lesson in created
        if lesson.tier == Tier.WORKING and not lesson.protected and lesson.relevance == "low"
    ]
    for lesson in deletable[:2]:
        services.lesson_delete(lesson=lesson, actor=ACTOR, batch=cleanup, reason="no longer relevant")
    return n


def _run_hooks(stdout):
    for name in DEMO_HOOKS:
        try:
            module = importlib.import_module(name)
        except ImportError as exc:
            # The hook itself (or its feature package) does not exist yet: nothing to seed. Any
            # other import error comes from inside an existing hook and must be seen.
            parts = name.split(".")
            if exc.name in {".".join(parts[:i]) for i in range(2, len(parts) + 1)}:
                continue
            raise
        module.seed(stdout)


def seed_demo(stdout=None, *, today=None):
    stdout = stdout or sys.stdout
    today = today or timezone.localdate()
    created, _ = personas_seed_defaults()
    if created:
        stdout.write(f"Personas created: {', '.join(created)}\n")
    projects = []
    for spec in data.PROJECTS:
        project, made = Project.objects.get_or_create(slug=spec["slug"], defaults=spec)
        projects.append(project)
        if made:
            stdout.write(f"Project created: {project.name} ({project.repository_url})\n")
    total = 0
    for project in projects:
        for persona_name in data.LESSONS[project.slug]:
            persona = Persona.objects.filter(name__iexact=persona_name).first()
            if persona is None:
                continue
            memory = services.memory_get_or_create(persona=persona, project=project)
            if Lesson.objects.filter(memory=memory).exists():
                continue
            n = seed_memory(memory, today)
            total += n
            stdout.write(f"  {persona.name} × {project.name}: {n} lessons\n")
    stdout.write(f"Demo lessons created: {total}\n" if total else "Demo data already present; nothing added.\n")
    _run_hooks(stdout)
    return total
