"""Demo data for the promotion inbox: recurring lessons in the demo memories, then detection.

Called by `manage.py seed_demo`; safe to run again (lessons are added once, detection is idempotent).
"""

from datetime import timedelta

from django.utils import timezone

from memory import services
from memory.models import ChangeBatch, Lesson, Memory, PromotionCandidate, content_hash
from memory.promotions.detection_runs import promotion_detect

# Each theme: the same lesson learned three times, a week apart, worded a little differently.
THEMES = [
    [
        (
            "PATTERN",
            "Verify the webhook signature before parsing the payload in src/webhooks/handler.py",
            "src/webhooks/handler.py#L20-L34",
        ),
        (
            "OBSERVATION",
            "Webhook payloads were parsed before the signature check; forged events reached the queue",
            "src/webhooks/handler.py#L22",
        ),
        (
            "PATTERN",
            "Webhook handler: signature check first, payload parsing second, queue last",
            "src/webhooks/handler.py#L20-L40, src/queue/publish.py#L8",
        ),
    ],
    [
        (
            "DECISION",
            "Database migrations must be backwards compatible for one release (see docs/adr/0007.md)",
            "docs/adr/0007.md",
        ),
        (
            "OBSERVATION",
            "A migration that dropped a column broke the old release still serving traffic",
            "migrations/0042_drop_legacy.py",
        ),
        (
            "DECISION",
            "Keep migrations backwards compatible for one release; drop columns in the release after",
            "docs/adr/0007.md, migrations/0042_drop_legacy.py",
        ),
    ],
    [
        (
            "HYPOTHESIS",
            "Flaky checkout tests come from the shared clock fixture in tests/conftest.py",
            "tests/conftest.py#L40-L52",
        ),
        (
            "OBSERVATION",
            "Checkout tests pass alone and fail together because the clock fixture is shared",
            "tests/conftest.py#L44",
        ),
        (
            "PATTERN",
            "Freeze the clock per test, never share the clock fixture across checkout tests",
            "tests/conftest.py#L40-L52, tests/checkout/test_totals.py",
        ),
    ],
]


def _add_theme(memory, theme, today):
    hashes = set(Lesson.objects.filter(memory=memory).values_list("content_hash", flat=True))
    missing = [item for item in theme if content_hash(item[1]) not in hashes]
    if not missing:
        return 0
    actor = services.Actor.system("demo data")
    batch = services.batch_create(memory=memory, kind=ChangeBatch.Kind.IMPORT, actor=actor, label="Demo lessons")
    for weeks_ago, (category, text, refs) in zip((3, 2, 1), theme):
        if (category, text, refs) in missing:
            services.lesson_create(
                memory=memory,
                text=text,
                category=category,
                refs=refs,
                actor=actor,
                batch=batch,
                lesson_date=today - timedelta(weeks=weeks_ago),
            )
    return len(missing)


def seed(stdout):
    today = timezone.localdate()
    memories = list(Memory.objects.select_related("persona", "project").order_by("id"))
    if not memories:
        stdout.write("promotions: no memories yet; nothing to propose")
        return
    added = sum(_add_theme(memory, theme, today) for memory, theme in zip(memories, THEMES))
    created = sum(len(promotion_detect(memory=memory).created) for memory in memories)
    pending = PromotionCandidate.objects.filter(status=PromotionCandidate.Status.PENDING).count()
    stdout.write(f"promotions: {added} recurring lessons added, {created} new candidates, {pending} pending review")
