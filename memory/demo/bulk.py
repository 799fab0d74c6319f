"""Routine working notes for the one memory that has grown past its line limit, so compaction has
something to propose. Built from a few modules and findings, deterministically."""

import random

MODULES = [
    ("src/routes/orders.ts", "orders route", 40, 180),
    ("src/routes/products.ts", "products route", 15, 140),
    ("src/routes/cart.ts", "cart route", 10, 120),
    ("src/services/checkout.ts", "checkout service", 60, 900),
    ("src/services/inventory.ts", "inventory service", 20, 160),
    ("src/services/promotions.ts", "promotions service", 30, 260),
    ("src/clients/shipping.ts", "shipping client", 10, 90),
    ("src/clients/payments.ts", "payments client", 15, 130),
    ("src/jobs/send-receipts.ts", "receipt job", 5, 70),
    ("src/jobs/sync-stock.ts", "stock sync job", 5, 110),
    ("src/repositories/customers.ts", "customer repository", 10, 150),
    ("src/lib/money.ts", "money helpers", 5, 60),
]

FINDINGS = [
    ("OBSERVATION", "{name}: the error path returns a bare string; wrap it in `AppError` so the handler sets 4xx."),
    ("OBSERVATION", "{name}: log line at debug level includes the full payload; trim to ids."),
    ("OBSERVATION", "{name}: response schema is missing `updatedAt`, so clients never see it."),
    (
        "OBSERVATION",
        "{name}: an `await` inside the loop makes requests sequential; `Promise.all` with a limit is fine here.",
    ),
    ("OBSERVATION", "{name}: the transaction is opened before validation; validate first to keep it short."),
    ("OBSERVATION", "{name}: imports a helper from another service's internals instead of its index."),
    ("HYPOTHESIS", "{name}: p95 latency jump after the last deploy likely comes from the extra Redis round trip."),
    ("HYPOTHESIS", "{name}: intermittent timeouts may be the default 5 s client timeout on cold starts."),
    ("TODO", "{name}: add the missing unit test for the empty-input branch."),
    ("TODO", "{name}: rename the boolean flag `skip` to say what it skips."),
    ("TODO", "{name}: remove the feature flag check once the rollout reached 100%."),
    ("OBSERVATION", "{name}: date handling uses local time; use UTC via `src/lib/dates.ts`."),
    ("OBSERVATION", "{name}: duplicated zod schema; reuse the one in packages/contracts."),
    ("PATTERN", "{name}: follow the existing idempotency-key handling when adding write endpoints."),
]


def bulk_working_lessons(count, *, seed=20260101):
    """`count` distinct (category, text, ref, relevance) tuples."""
    rng = random.Random(seed)
    combos = [(m, f) for m in MODULES for f in FINDINGS]
    rng.shuffle(combos)
    out = []
    for (path, name, lo, hi), (category, template) in combos[:count]:
        start = rng.randint(lo, max(lo, hi - 12))
        ref = f"{path}#L{start}-L{start + rng.randint(2, 12)}"
        relevance = rng.choices(["low", "medium", "high", "critical"], weights=[30, 55, 13, 2])[0]
        out.append((category, template.format(name=name.capitalize()), ref, relevance))
    return out
