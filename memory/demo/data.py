"""The handwritten part of the demo: two projects and what each default persona learned about them.

Each lesson is (tier, category, text, refs, relevance). Core lessons come first in each list.
"""

PROJECTS = [
    {
        "slug": "storefront-api",
        "name": "Storefront API",
        "repository_url": "https://github.com/harborline/storefront-api",
        "repository_ref": "main",
    },
    {
        "slug": "tidewater-etl",
        "name": "Tidewater ETL",
        "repository_url": "https://github.com/harborline/tidewater-etl",
        "repository_ref": "main",
    },
]

C, W = "core", "working"
P, D, A = "PATTERN", "DECISION", "ARCHITECTURE"
O, H, T = "OBSERVATION", "HYPOTHESIS", "TODO"  # noqa: E741 -- one-letter codes, like C/W/P/D/A above, keep the table below scannable

# --- Storefront API: TypeScript, Fastify, Prisma, Postgres, Redis, Stripe --------------------------

STOREFRONT = {
    "Vera": [
        (
            C,
            P,
            "Every route under src/routes/admin/ must register the `requireRole('staff')` preHandler; three "
            "past findings were admin routes that only checked authentication.",
            ["src/routes/admin/index.ts#L12-L28", "src/plugins/auth.ts#L40-L71"],
            "critical",
        ),
        (
            C,
            D,
            "Stripe webhooks are verified with the raw request body; the JSON body parser is disabled for "
            "/webhooks/stripe only, never globally.",
            ["src/routes/webhooks/stripe.ts#L8-L35"],
            "high",
        ),
        (
            C,
            P,
            "Order lookups must scope by `customerId` from the session, not from the URL; IDOR on "
            "GET /orders/:id was reported twice.",
            ["src/routes/orders.ts#L44-L61"],
            "critical",
        ),
        (
            C,
            A,
            "Secrets load only through src/config/env.ts (zod-validated); nothing else reads process.env.",
            ["src/config/env.ts#L1-L58"],
            "high",
        ),
        (
            W,
            O,
            "The password reset token is compared with `===`; switch to `crypto.timingSafeEqual`.",
            ["src/services/auth/reset.ts#L77-L83"],
            "high",
        ),
        (
            W,
            O,
            "pino redaction misses `req.headers.cookie`; session cookies show up in request logs.",
            ["src/plugins/logger.ts#L15-L22"],
            "critical",
        ),
        (W, T, "Rotate the Stripe restricted key that appeared in the CI log of run 4812.", [], "high"),
        (
            W,
            O,
            "`fast-jwt` is pinned to 3.1.1 which accepts tokens without `exp`; upgrade and enforce `requiredClaims`.",
            ["package.json#L41", "src/plugins/auth.ts#L18-L25"],
            "high",
        ),
        (
            W,
            H,
            "The CSV export builds the filename from the query string; likely header injection via CRLF.",
            ["src/routes/exports.ts#L29-L40"],
            "medium",
        ),
        (
            W,
            O,
            "Rate limiting keys on `req.ip`, but behind the load balancer every request comes from 10.0.0.0/8; "
            "set `trustProxy`.",
            ["src/server.ts#L30-L36"],
            "high",
        ),
        (
            W,
            O,
            "CORS allows `*.harborline.dev` with credentials; staging subdomains are user-controllable.",
            ["src/plugins/cors.ts#L5-L14"],
            "medium",
        ),
        (
            W,
            T,
            "Add a Semgrep rule for `prisma.$queryRawUnsafe` — two new call sites this month.",
            ["src/repositories/search.ts#L52"],
            "medium",
        ),
        (
            W,
            O,
            "Image upload trusts the client `Content-Type`; sniff magic bytes before handing files to sharp.",
            ["src/routes/uploads.ts#L18-L47"],
            "medium",
        ),
        (
            W,
            O,
            "Gift card codes come from `Math.random()`; use `crypto.randomInt`.",
            ["src/services/giftcards.ts#L10-L16"],
            "high",
        ),
        (
            W,
            H,
            "Session fixation is possible on login because the session id is not regenerated.",
            ["src/routes/auth/login.ts#L33-L58"],
            "medium",
        ),
    ],
    "Anselm": [
        (
            C,
            A,
            "Routes stay thin: validation with zod schemas, then one call into src/services/*; no Prisma "
            "calls from route handlers.",
            ["src/routes/orders.ts", "src/services/orders.ts"],
            "high",
        ),
        (
            C,
            D,
            "Money is integer minor units (`amountCents`) end to end; floats were removed in the 2.0 "
            "migration and must not come back.",
            ["prisma/schema.prisma#L88-L104"],
            "critical",
        ),
        (
            C,
            D,
            "Schema changes ship as expand → backfill → contract across three deploys; "
            "`prisma migrate deploy` runs before the new code starts.",
            ["prisma/migrations"],
            "high",
        ),
        (
            C,
            P,
            "Background work goes through BullMQ queues defined in src/jobs/queues.ts; no `setTimeout` "
            "for deferred work in request handlers.",
            ["src/jobs/queues.ts#L1-L40"],
            "medium",
        ),
        (
            W,
            O,
            "src/services/checkout.ts is 900 lines and owns pricing, tax and inventory; split pricing first.",
            ["src/services/checkout.ts#L1-L910"],
            "medium",
        ),
        (
            W,
            D,
            "Agreed to keep the REST API and add GraphQL only for the storefront BFF, not for partners.",
            [],
            "medium",
        ),
        (
            W,
            O,
            "Two PRs this week re-implemented pagination; the cursor helper lives in src/lib/paginate.ts.",
            ["src/lib/paginate.ts#L5-L44"],
            "low",
        ),
        (
            W,
            H,
            "Inventory reservation races under load because it reads then writes; a single "
            "`UPDATE … WHERE stock >= $1` would fix it.",
            ["src/services/inventory.ts#L60-L92"],
            "high",
        ),
        (
            W,
            T,
            "Write an ADR for moving search from Postgres trigram to OpenSearch before anyone starts on it.",
            [],
            "medium",
        ),
        (
            W,
            O,
            "The `events` table has no index on `(aggregate_id, created_at)`; the order timeline query scans.",
            ["prisma/schema.prisma#L210-L224"],
            "medium",
        ),
        (
            W,
            O,
            "Circular import between src/services/cart.ts and src/services/promotions.ts is hidden by a "
            "lazy `require`.",
            ["src/services/cart.ts#L3", "src/services/promotions.ts#L7"],
            "medium",
        ),
        (
            W,
            O,
            "Cache keys for product pages omit the locale, so the French catalogue served English prices once.",
            ["src/lib/cache.ts#L21-L30"],
            "high",
        ),
    ],
    "Noor": [
        (
            C,
            P,
            "Integration tests run against a real Postgres from docker-compose.test.yml; Prisma mocks hid "
            "two constraint bugs.",
            ["docker-compose.test.yml", "test/setup/db.ts#L1-L35"],
            "high",
        ),
        (
            C,
            P,
            "Freeze time with `vi.useFakeTimers()` in any test that touches order dates or refunds.",
            ["test/orders/refund.spec.ts#L12-L20"],
            "medium",
        ),
        (
            C,
            D,
            "A flaky test is quarantined with `describe.skip` only together with a ticket id in the title.",
            [],
            "medium",
        ),
        (
            W,
            O,
            "test/checkout/cart.spec.ts fails about one run in twenty: the cart total is asserted before "
            "the promotion job finishes.",
            ["test/checkout/cart.spec.ts#L88-L104"],
            "high",
        ),
        (
            W,
            O,
            "No test covers an order with zero line items; the API returns 500 instead of 422.",
            ["src/routes/orders.ts#L70-L79"],
            "medium",
        ),
        (
            W,
            O,
            "Playwright checkout test depends on the seeded product `sku-1001` existing; seed it in the test.",
            ["e2e/checkout.spec.ts#L5-L31"],
            "medium",
        ),
        (
            W,
            T,
            "Add property tests for the tax rounding helper with amounts near .005.",
            ["src/lib/tax.ts#L14-L29"],
            "medium",
        ),
        (
            W,
            O,
            "Refund tests pass locally but fail in CI at 00:00-01:00 UTC because of the day boundary.",
            ["test/orders/refund.spec.ts#L40-L58"],
            "high",
        ),
        (
            W,
            H,
            "The webhook retry test is slow (9 s) because it waits for real backoff; inject the clock.",
            ["test/webhooks/stripe.spec.ts#L60-L95"],
            "low",
        ),
        (
            W,
            O,
            "Coverage of src/services/promotions.ts is 41%; stacking rules have no tests at all.",
            ["src/services/promotions.ts"],
            "medium",
        ),
        (
            W,
            O,
            "Contract tests for the partner API are not run in CI; `npm run test:contract` is missing from "
            "the workflow.",
            [".github/workflows/ci.yml#L40-L66"],
            "medium",
        ),
    ],
    "Felix": [
        (
            C,
            P,
            "New route modules must be added to src/routes/index.ts; the autoloader was removed and a "
            "missing import fails silently with 404.",
            ["src/routes/index.ts#L1-L30"],
            "high",
        ),
        (
            C,
            P,
            "Use `AppError` subclasses from src/lib/errors.ts; the error handler maps them to status codes.",
            ["src/lib/errors.ts#L1-L48", "src/plugins/error-handler.ts#L10-L37"],
            "medium",
        ),
        (
            C,
            D,
            "Prisma client is a singleton from src/db.ts; creating clients per request exhausted the pool in March.",
            ["src/db.ts#L1-L14"],
            "high",
        ),
        (
            C,
            A,
            "Shared request/response types live in packages/contracts and are imported by the web app; "
            "edit them there, never duplicate.",
            ["packages/contracts/src/index.ts"],
            "medium",
        ),
        (
            W,
            O,
            "`npm run generate` must run after editing prisma/schema.prisma or type errors appear in CI only.",
            ["prisma/schema.prisma", "package.json#L12"],
            "medium",
        ),
        (
            W,
            O,
            "The order confirmation email template expects `order.items[].title`, not `name`.",
            ["src/emails/order-confirmation.tsx#L22-L40"],
            "low",
        ),
        (
            W,
            T,
            "Replace the hand-written retry loop in the shipping client with `p-retry`.",
            ["src/clients/shipping.ts#L30-L61"],
            "low",
        ),
        (
            W,
            O,
            "Fastify schema serialisation drops fields that are not in the response schema; add new fields to both.",
            ["src/routes/products.ts#L15-L48"],
            "medium",
        ),
        (
            W,
            H,
            "The slow product listing is the N+1 on variants; `include: { variants: true }` should fix it.",
            ["src/repositories/products.ts#L25-L44"],
            "medium",
        ),
    ],
}

# --- Tidewater ETL: Python, Airflow, pandas/polars, S3, Snowflake, dbt -------------------------------

TIDEWATER = {
    "Vera": [
        (
            C,
            P,
            "Snowflake credentials come from the Airflow connection `snowflake_default` only; never from DAG "
            "params or Variables.",
            ["dags/common/connections.py#L8-L30"],
            "critical",
        ),
        (
            C,
            D,
            "Raw customer exports land in the `raw-pii` bucket with SSE-KMS; anything derived must be "
            "hashed before it reaches `curated`.",
            ["pipelines/ingest/s3_writer.py#L20-L52"],
            "high",
        ),
        (
            C,
            A,
            "Each DAG runs with its own IAM role scoped to its prefixes; the shared `etl-admin` role is for "
            "break-glass only.",
            ["infra/iam/dag_roles.tf#L1-L80"],
            "high",
        ),
        (
            W,
            O,
            "`BashOperator` in dags/backfill_orders.py interpolates `dag_run.conf` into the shell command.",
            ["dags/backfill_orders.py#L41-L49"],
            "critical",
        ),
        (
            W,
            O,
            "The SFTP sensor disables host key checking (`no_host_key_check=True`).",
            ["dags/vendor_feed.py#L22-L30"],
            "high",
        ),
        (
            W,
            T,
            "Pin `requests` and `urllib3` in requirements/base.txt; the lock file drifted from the image.",
            ["requirements/base.txt#L3-L19"],
            "medium",
        ),
        (
            W,
            O,
            "Task logs print the full S3 presigned URL, which stays valid for 7 days.",
            ["pipelines/export/partner_share.py#L64-L70"],
            "high",
        ),
        (
            W,
            H,
            "`yaml.load` without a Loader in the config reader would execute tags from a crafted file.",
            ["pipelines/config.py#L18-L24"],
            "high",
        ),
        (
            W,
            O,
            "The dbt profile in the repo still has a real dev password in `profiles.yml` history.",
            ["dbt/profiles.yml"],
            "critical",
        ),
        (
            W,
            O,
            "Pickle is used for the feature cache shared between tasks; switch to parquet.",
            ["pipelines/features/cache.py#L12-L40"],
            "medium",
        ),
    ],
    "Anselm": [
        (
            C,
            A,
            "Pipelines are extract → validate → load; validation with pandera schemas runs before any write "
            "to curated tables.",
            ["pipelines/validate/schemas.py", "pipelines/load/snowflake.py"],
            "high",
        ),
        (
            C,
            D,
            "All tables are partitioned by `event_date`; backfills rewrite whole partitions, never rows.",
            ["pipelines/load/snowflake.py#L70-L118"],
            "high",
        ),
        (
            C,
            P,
            "DAG files only wire tasks; logic lives in `pipelines/` so it can be tested without Airflow.",
            ["dags/daily_orders.py#L1-L60"],
            "medium",
        ),
        (
            W,
            O,
            "The orders DAG and the refunds DAG both compute net revenue differently; unify in dbt.",
            ["dbt/models/marts/fct_revenue.sql#L1-L44", "pipelines/transform/refunds.py#L30-L58"],
            "high",
        ),
        (
            W,
            D,
            "Chose polars for the new clickstream pipeline; pandas stays for the legacy ones until rewritten.",
            [],
            "medium",
        ),
        (
            W,
            H,
            "Daily orders DAG misses its SLA on Mondays because the weekend partition is three times larger; "
            "split by hour.",
            ["dags/daily_orders.py#L15-L22"],
            "medium",
        ),
        (
            W,
            T,
            "Document the late-arriving-data policy: how many days back does the incremental model look?",
            ["dbt/models/staging/stg_events.sql#L5-L12"],
            "medium",
        ),
        (
            W,
            O,
            "Two DAGs write to `analytics.sessions`; ownership is unclear and they overwrite each other.",
            ["dags/sessions.py#L30", "dags/clickstream.py#L77"],
            "high",
        ),
        (
            W,
            O,
            "XComs carry full DataFrames in the vendor DAG; pass S3 keys instead.",
            ["dags/vendor_feed.py#L55-L71"],
            "medium",
        ),
    ],
    "Noor": [
        (
            C,
            P,
            "Every transform gets a golden-file test with a small parquet fixture under tests/fixtures/.",
            ["tests/transform/test_orders.py#L1-L40"],
            "high",
        ),
        (
            C,
            D,
            "dbt tests `not_null` and `unique` are mandatory on every mart primary key; CI fails without them.",
            ["dbt/models/marts/schema.yml"],
            "medium",
        ),
        (
            W,
            O,
            "test_clickstream_dedup is flaky because polars `unique()` does not keep order; use `maintain_order=True`.",
            ["tests/transform/test_clickstream.py#L52-L70"],
            "high",
        ),
        (
            W,
            O,
            "Timezone bug: events at 23:30 America/Los_Angeles land in the next UTC partition and are "
            "counted twice by the daily rollup.",
            ["pipelines/transform/sessions.py#L88-L104"],
            "critical",
        ),
        (
            W,
            T,
            "Add a test for an empty vendor file (header only); the loader currently crashes.",
            ["pipelines/ingest/vendor_csv.py#L30-L45"],
            "medium",
        ),
        (
            W,
            O,
            "The DAG integrity test does not import dags/experimental/, so a broken DAG shipped.",
            ["tests/dags/test_integrity.py#L5-L20"],
            "medium",
        ),
        (
            W,
            H,
            "Row count checks between raw and curated differ by ~0.1% daily; probably the dedup on "
            "`event_id` collapsing retries.",
            ["pipelines/validate/reconcile.py#L20-L49"],
            "medium",
        ),
        (
            W,
            O,
            "hypothesis found that currency conversion fails for JPY (zero decimals).",
            ["pipelines/transform/fx.py#L10-L28"],
            "high",
        ),
        (
            W,
            O,
            "moto-based S3 tests leak buckets between tests because the fixture is module-scoped.",
            ["tests/conftest.py#L30-L52"],
            "low",
        ),
    ],
    "Felix": [
        (
            C,
            P,
            "Register new DAG tasks through `pipelines.tasks.make_task()`; it sets retries, SLA and "
            "on-failure alerts consistently.",
            ["pipelines/tasks.py#L10-L55"],
            "high",
        ),
        (
            C,
            D,
            "Python 3.11 with `uv` lock files; regenerate with `make lock`, never edit requirements by hand.",
            ["Makefile#L20-L28"],
            "medium",
        ),
        (
            W,
            O,
            "The Snowflake loader needs `quote_identifiers=False` or mixed-case columns break the dbt models.",
            ["pipelines/load/snowflake.py#L40-L47"],
            "medium",
        ),
        (
            W,
            O,
            "`pd.read_csv` infers zip codes as integers and drops leading zeros; pass `dtype={'zip': str}`.",
            ["pipelines/ingest/vendor_csv.py#L22"],
            "high",
        ),
        (
            W,
            T,
            "Move the hard-coded vendor list in dags/vendor_feed.py into config/vendors.yaml.",
            ["dags/vendor_feed.py#L10-L18"],
            "low",
        ),
        (
            W,
            O,
            "Local runs need `AIRFLOW__CORE__LOAD_EXAMPLES=False` or the scheduler takes minutes to start.",
            ["docker-compose.yml#L25-L31"],
            "low",
        ),
        (
            W,
            H,
            "Memory spikes in the sessionisation task come from `groupby().apply`; a window function would stream.",
            ["pipelines/transform/sessions.py#L40-L75"],
            "medium",
        ),
        (
            W,
            O,
            "dbt `run-operation` for grants must run after `dbt build`, not before.",
            ["dags/dbt_build.py#L30-L44"],
            "medium",
        ),
    ],
}

LESSONS = {"storefront-api": STOREFRONT, "tidewater-etl": TIDEWATER}

# The same lesson, worded a little differently each time it was learned: promotion detection should
# notice these as candidates. (persona, project, [(days_ago, text, refs)])
REPEATED_THEMES = [
    (
        "Noor",
        "storefront-api",
        [
            (
                63,
                "cart.spec.ts flaked again: total asserted before the promotion worker applied the discount.",
                ["test/checkout/cart.spec.ts#L88-L104"],
            ),
            (
                41,
                "Flaky cart total in test/checkout/cart.spec.ts — the promotion job had not finished yet.",
                ["test/checkout/cart.spec.ts#L90-L104"],
            ),
            (
                19,
                "Cart spec failed on the total once more; it must wait for the promotion job before asserting.",
                ["test/checkout/cart.spec.ts#L88-L104"],
            ),
            (
                4,
                "Again the cart.spec.ts total assertion raced the promotion worker.",
                ["test/checkout/cart.spec.ts#L88-L104"],
            ),
        ],
    ),
    (
        "Anselm",
        "storefront-api",
        [
            (
                70,
                "A route handler called Prisma directly again (src/routes/reviews.ts); moved the query into the "
                "reviews service.",
                ["src/routes/reviews.ts#L20-L34"],
            ),
            (
                44,
                "Review caught Prisma calls inside src/routes/wishlist.ts; routes must go through services.",
                ["src/routes/wishlist.ts#L15-L29"],
            ),
            (
                12,
                "Third PR this quarter with Prisma in a route handler (src/routes/addresses.ts).",
                ["src/routes/addresses.ts#L11-L40"],
            ),
        ],
    ),
    (
        "Vera",
        "tidewater-etl",
        [
            (
                55,
                "DAG task logged the Snowflake password via `conn.get_uri()` in a debug line.",
                ["dags/daily_orders.py#L88"],
            ),
            (
                30,
                "Credentials in task logs again: `conn.get_uri()` printed in the vendor feed DAG.",
                ["dags/vendor_feed.py#L97"],
            ),
            (
                9,
                "Another `get_uri()` in a log line leaked the warehouse password; add a lint rule.",
                ["dags/sessions.py#L64"],
            ),
        ],
    ),
]

# An exact repeat, counted as confirmations of one lesson on distinct dates.
CONFIRMED = (
    "Felix",
    "tidewater-etl",
    "Run `make lock` after adding a dependency or the Docker build fails.",
    ["Makefile#L20-L28"],
    [50, 33, 15],
)

# Lesson text is untrusted: the demo carries a few with invisible and bidi characters, which review
# screens must show visibly.
TRICKY = [
    (
        "Vera",
        "storefront-api",
        "Found a zero\u200bwidth space inside the `isAdmin` check name in a PR — visually identical identifiers.",
        ["src/plugins/auth.ts#L52"],
    ),
    (
        "Anselm",
        "tidewater-etl",
        "Comment in the loader contains a right-to-left override: "
        "\u202eedoc esrever\u202c — check with `grep -P '\\x{202E}'`.",
        ["pipelines/load/snowflake.py#L12"],
    ),
    (
        "Noor",
        "storefront-api",
        "Product titles with \u2066bidi isolates\u2069 break the search snapshot test.",
        ["test/search/snapshot.spec.ts#L30-L41"],
    ),
    (
        "Felix",
        "storefront-api",
        "Soft hyphen (\u00ad) in SKU values from the import makes lookups miss.",
        ["src/services/catalog-import.ts#L80-L92"],
    ),
]

# Markdown in lesson text (rendered with raw HTML off).
MARKDOWN = [
    (
        "Felix",
        "storefront-api",
        "Prefer **`reply.code(201).send(body)`** over `reply.status(201)` — see "
        "[Fastify reply docs](https://fastify.dev/docs/latest/Reference/Reply/).",
        ["src/routes/orders.ts#L90-L96"],
    ),
    (
        "Noor",
        "tidewater-etl",
        "Use `pytest -k 'not slow'` locally; the *slow* marker covers the Snowflake integration tests.",
        ["pyproject.toml#L40-L48"],
    ),
    (
        "Anselm",
        "storefront-api",
        "Decision record: _cursor_ pagination for all list endpoints, **no** offset pagination for new APIs.",
        ["docs/adr/0007-pagination.md"],
    ),
    (
        "Vera",
        "tidewater-etl",
        "`<script>alert(1)</script>` appeared in a vendor product name — the report template must escape it.",
        ["pipelines/export/report.py#L33"],
    ),
]

# Later lessons that replaced earlier ones: (persona, project, start of the old text, new text, refs)
SUPERSEDED = [
    (
        "Felix",
        "storefront-api",
        "The slow product listing is the N+1",
        "Confirmed the product listing N+1: `include: { variants: true }` cut the query count from 51 to 2.",
        ["src/repositories/products.ts#L25-L44"],
    ),
    (
        "Vera",
        "storefront-api",
        "Session fixation is possible",
        "Session fixation on login confirmed and fixed: the session id is regenerated right after authentication.",
        ["src/routes/auth/login.ts#L33-L61"],
    ),
    (
        "Noor",
        "tidewater-etl",
        "Row count checks between raw and curated",
        "The raw/curated row gap is the `event_id` dedup collapsing client retries: expected, now documented.",
        ["pipelines/validate/reconcile.py#L20-L55"],
    ),
]
