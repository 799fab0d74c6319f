"""Realistic data for the dashboard's browser tests and screenshots, created through the services."""

from datetime import date, timedelta

from django.utils import timezone

from memory import services
from memory.models import ChangeBatch
from tests.factories import MemoryFactory, PersonaFactory, ProjectFactory

JOB = services.Actor.job("reflection run")

CORE = [
    (
        "PATTERN",
        "Every view that reads a `Memory` must check the caller's role first; see the decorators.",
        "src/auth/roles.py#L12-L40",
        "critical",
    ),
    (
        "DECISION",
        "Sessions expire after **30 minutes** of inactivity (security review, March).",
        "src/auth/session.py#L8",
        "high",
    ),
    (
        "ARCHITECTURE",
        "Payments go through the `ledger` service only; never write `payments` rows directly.",
        "src/payments/ledger.py#L1-L60",
        "high",
    ),
]
WORKING = [
    (
        "OBSERVATION",
        "Login throttling resets on password change, which lets attackers retry faster.",
        "src/auth/login.py#L88-L95",
        "high",
    ),
    (
        "HYPOTHESIS",
        "Flaky checkout test is caused by the 2s timeout in `wait_for_ledger`.",
        "tests/test_checkout.py#L140",
        "medium",
    ),
    (
        "TODO",
        "Add an index on `orders.created_at` before the reporting query ships.",
        "src/orders/models.py#L30",
        "medium",
    ),
    (
        "OBSERVATION",
        "The retry decorator swallows `TimeoutError`; callers never see it.",
        "src/common/retry.py#L5-L22",
        "low",
    ),
    ("PATTERN", "Feature flags are read once per request via `flags.current()`.", "src/common/flags.py", "medium"),
    ("DECISION", "Use UTC everywhere in the API; convert in the client.", "docs/adr/0007-time.md", "medium"),
    # Hidden characters, as a poisoned reflection might carry them: the dashboard must show them.
    (
        "OBSERVATION",
        "Requests from the gateway\u200b are trusted\u202e without a token check.",
        "src/gateway/trust.py#L14",
        "high",
    ),
]


def seed(*, lessons=True):
    checkout = ProjectFactory(
        slug="checkout-api", name="Checkout API", repository_url="https://github.com/acme/checkout-api"
    )
    mobile = ProjectFactory(slug="mobile-app", name="Mobile App", repository_url="https://github.com/acme/mobile")
    infra = ProjectFactory(slug="platform-infra", name="Platform Infra", repository_url="")
    sec = PersonaFactory(name="Sentinel", role="Security Reviewer")
    lead = PersonaFactory(name="Atlas", role="Tech Lead")
    qa = PersonaFactory(name="Probe", role="QA Engineer")
    PersonaFactory(name="Legacy Bot", role="Implementer", archived_at=timezone.now())
    now = timezone.now()
    main = MemoryFactory(
        persona=sec,
        project=checkout,
        last_reflected_at=now - timedelta(hours=3),
        last_compacted_at=now - timedelta(days=6),
        working_char_budget=700,
    )
    others = [
        MemoryFactory(persona=sec, project=mobile, last_reflected_at=now - timedelta(days=2)),
        MemoryFactory(
            persona=lead,
            project=checkout,
            last_reflected_at=now - timedelta(days=1),
            last_refined_at=now - timedelta(days=4),
            core_char_budget=150,
        ),
        MemoryFactory(persona=lead, project=infra),
        MemoryFactory(persona=qa, project=checkout, last_reflected_at=now - timedelta(hours=20)),
    ]
    if lessons:
        for i, (cat, text, ref, rel) in enumerate(CORE):
            services.lesson_create(
                memory=main,
                tier="core",
                category=cat,
                text=text,
                refs=ref,
                relevance=rel,
                actor=JOB,
                lesson_date=date(2026, 2, 1) + timedelta(days=i),
            )
        batch = services.batch_create(
            memory=main, kind=ChangeBatch.Kind.REFLECTION, actor=JOB, label="reflection after PR #812"
        )
        for i, (cat, text, ref, rel) in enumerate(WORKING):
            services.lesson_create(
                memory=main,
                category=cat,
                text=text,
                refs=ref,
                relevance=rel,
                actor=JOB,
                batch=batch,
                lesson_date=date(2026, 3, 1) + timedelta(days=i),
            )
        for n, memory in enumerate(others):
            for cat, text, ref, rel in CORE[: n + 1]:
                services.lesson_create(
                    memory=memory, tier="core", category=cat, text=text, refs=ref, relevance=rel, actor=JOB
                )
            for cat, text, ref, rel in WORKING[: 2 + n]:
                services.lesson_create(memory=memory, category=cat, text=text, refs=ref, relevance=rel, actor=JOB)
    return main
