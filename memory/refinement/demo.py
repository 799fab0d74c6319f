"""Demo data for refinement: one completed run and one run the retention breaker rolled back.

Both runs go through the offline engine and the real session handler, so what the pages show is
exactly what a real run records.
"""

from datetime import date

from memory import services
from memory.engines.offline import OfflineEngine
from memory.models import Lesson, Memory, RefinementRun
from memory.refinement.session import refinement_run_create, refinement_run_execute
from personas.models import Persona, Project

ACTOR = services.Actor.system("demo")

SHARED = [
    ("PATTERN", "Run database migrations before restarting the worker pool, never after"),
    ("PATTERN", "Run database migrations before restarting the worker pool, never after."),
    ("DECISION", "Feature flags are removed within two sprints of a full rollout"),
    ("ARCHITECTURE", "The payments service owns the ledger tables; other services read through its API"),
    ("ARCHITECTURE", "Search indexing is asynchronous: writes land in the outbox table first"),
    ("PATTERN", "Cache keys always include the tenant id to keep tenants apart in shared caches"),
    ("DECISION", "Public API changes need a deprecation window of at least 90 days"),
    ("PATTERN", "Every background job logs its run id so retries can be traced end to end"),
    ("ARCHITECTURE", "Uploads go to object storage directly with signed URLs; the app never proxies bytes"),
    ("PATTERN", "Timeouts on outbound HTTP calls are explicit; the client default of none is never used"),
    ("DECISION", "Releases are cut on Tuesdays so the on-call week starts with the new version"),
    ("PATTERN", "Integration tests run against a real database, not mocks of the ORM"),
    ("ARCHITECTURE", "Reports are built from the read replica; the primary only serves transactions"),
    ("PATTERN", "Never log request bodies of the auth endpoints; they carry passwords"),
    ("DECISION", "The mobile app pins the API version in a header instead of the URL"),
]

SMALL = [
    ("PATTERN", "Keep the on-call runbook next to the service code, in docs/runbook.md"),
    ("PATTERN", "Keep the on-call runbook next to the service code, in docs/runbook.md."),
    ("PATTERN", "keep the on-call runbook next to the service code in docs/runbook.md"),
    ("DECISION", "Alerts page a human only when a customer can notice the problem"),
]


def _memory(persona_name, role, project_slug, project_name, lessons):
    persona = Persona.objects.filter(name__iexact=persona_name).first() or Persona.objects.create(
        name=persona_name, role=role)
    project, _ = Project.objects.get_or_create(slug=project_slug, defaults={"name": project_name})
    memory = services.memory_get_or_create(persona=persona, project=project)
    if not Lesson.objects.filter(memory=memory, tier="core").exists():
        batch = services.batch_create(memory=memory, kind="import", actor=ACTOR, label="demo core memory")
        for category, text in lessons:
            services.lesson_create(memory=memory, text=text, category=category, tier="core", actor=ACTOR,
                                   batch=batch, lesson_date=date(2026, 1, 15))
    return memory


def _run(memory, stdout, label):
    if RefinementRun.objects.filter(memory=memory, trigger="demo").exists():
        stdout.write(f"refinement demo: {label} run already present\n")
        return None
    run = refinement_run_create(memory=memory, trigger="demo")
    run = refinement_run_execute(run_id=run.pk, engine=OfflineEngine())
    stdout.write(f"refinement demo: run #{run.pk} on {memory} ended {run.status} "
                 f"({run.ops_used} change(s), retention {run.retention:.1%})\n")
    return run


def seed(stdout):
    """Create (once) a completed run on a larger memory and a terminated one on a small memory."""
    big = _memory("Wing", "Site Reliability", "night-watch-demo", "Night Watch demo", SHARED)
    small = _memory("Claude", "Staff Engineer", "night-watch-demo", "Night Watch demo", SMALL)
    _run(big, stdout, "completed")
    _run(small, stdout, "terminated")
    return Memory.objects.filter(pk__in=[big.pk, small.pk])
