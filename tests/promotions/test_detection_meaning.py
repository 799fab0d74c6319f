"""Detection groups lessons that say the same thing, and nothing else."""

from datetime import date

import pytest

from memory.models import PromotionCandidate
from memory.promotions import detection
from memory.promotions.services import promotion_detect
from tests.factories import make_lesson

pytestmark = pytest.mark.django_db

# Filler so that term weights behave as in a real memory, where most lessons are about other things.
OTHER_LESSONS = [
    "Nightly exports of the analytics warehouse finish around 03:00 UTC",
    "The onboarding wizard keeps its state in local storage between steps",
    "Feature toggles are read from config/flags.yml when the app boots",
    "Grafana dashboards for the API live in the ops repository",
    "Customer support asked for CSV downloads of the audit trail",
    "PDF invoices are rendered by a headless Chromium in the worker",
]


def _others(memory):
    for i, text in enumerate(OTHER_LESSONS):
        make_lesson(memory, text, day=date(2025, 12, 1 + i))


def _facts(texts_and_days, paths=None):
    rows = [(i + 1, text, str(i), day) for i, (text, day) in enumerate(texts_and_days)]
    return detection.facts_from_rows(rows, paths or {}, {})


def test_chained_lessons_do_not_join_the_two_ends():
    # A and B share the cache key words, B and C share the eviction words; A and C share nothing.
    a = "Cache keys for tenant reports must include the tenant id"
    b = "Tenant report cache keys include the tenant id; the eviction job flushes stale report pages nightly"
    c = "Eviction job flushes stale pages nightly"
    texts = [(a, date(2026, 1, 1)), (b, date(2026, 1, 2)), (c, date(2026, 1, 3))] + [
        (t, date(2025, 12, 1)) for t in OTHER_LESSONS
    ]
    facts = _facts(texts)
    sim = detection.Similarity(sorted(facts, key=lambda f: f.id))
    assert sim(0, 1) >= sim.threshold and sim(1, 2) >= sim.threshold
    assert sim(0, 2) < detection.MIN_PAIR_SIMILARITY
    groups = detection.find_groups(facts, min_dates=2)
    assert not any({1, 3} <= set(g.lesson_ids) for g in groups)


def test_a_shared_file_without_similar_text_groups_nothing(memory):
    _others(memory)
    for i, text in enumerate(
        [
            "Rate limiter uses a sliding window of sixty seconds",
            "Logging of request bodies is disabled for privacy",
            "The health endpoint skips authentication",
        ]
    ):
        make_lesson(memory, text, refs="src/api/middleware.py#L10", day=date(2026, 2, 1 + i))
    assert promotion_detect(memory=memory).created == []


PARAPHRASES = {
    "english": [
        "Retrying the payment call without an idempotency key charged customers twice",
        "Payment retries need an idempotent key, otherwise the customer is charged again",
        "Idempotency keys stop double charges when a payment is retried",
    ],
    "german": [
        "Ladejobs müssen idempotent sein, sonst entstehen Duplikate in der Tabelle",
        "Der Ladejob war nicht idempotent und hat doppelte Zeilen in die Tabelle geschrieben",
        "Idempotente Ladejobs verhindern doppelte Tabellenzeilen nach einem Neustart",
    ],
}


@pytest.mark.parametrize("language", PARAPHRASES)
def test_paraphrases_meet_through_stemming_in_their_language(memory, language):
    _others(memory)
    lessons = [make_lesson(memory, text, day=date(2026, 3, 1 + 7 * i)) for i, text in enumerate(PARAPHRASES[language])]
    (candidate,) = promotion_detect(memory=memory).created
    assert set(candidate.supporting.all()) == set(lessons)
    assert candidate.distinct_dates == 3


def test_a_decoys_date_does_not_count_for_a_lesson_seen_on_two_dates(memory):
    _others(memory)
    make_lesson(
        memory,
        "The refund endpoint returns 403 unless the token has the refunds:write scope",
        refs="src/api/refunds.py#L12",
        day=date(2026, 5, 1),
    )
    make_lesson(
        memory,
        "Refunds need a token with the refunds:write scope; read-only tokens get 403",
        refs="src/api/refunds.py",
        day=date(2026, 5, 9),
    )
    make_lesson(
        memory,
        "Refund listings paginate with a cursor; the old page parameter is ignored",
        refs="src/api/refunds.py#L40",
        day=date(2026, 5, 20),
    )
    assert promotion_detect(memory=memory).created == []


def test_a_candidate_counts_only_its_members_dates(memory):
    _others(memory)
    make_lesson(
        memory, "Snapshot tests break on every copy change and nobody reviews their diffs", day=date(2026, 6, 1)
    )
    make_lesson(memory, "Snapshot test diffs are approved without review whenever copy changes", day=date(2026, 6, 1))
    make_lesson(
        memory, "Copy changes break snapshot tests and reviewers approve the diffs unread", day=date(2026, 6, 1)
    )
    make_lesson(memory, "Dark mode colours come from the design tokens package", day=date(2026, 6, 2))
    make_lesson(memory, "Design tokens are published on every merge to main", day=date(2026, 6, 3))
    assert promotion_detect(memory=memory).created == []


def test_a_big_cluster_yields_groups_of_at_most_twelve():
    texts = [
        (f"Webhook signature is verified before the payload is parsed, run {i}", date(2026, 1, 1 + i))
        for i in range(30)
    ]
    groups = detection.detect(_facts(texts), min_dates=3)
    assert groups and max(len(g.lesson_ids) for g in groups) <= detection.MAX_MEMBERS
    assert all(g.distinct_dates >= 3 for g in groups)


def test_old_detector_candidates_are_re_evaluated_once(memory, approver):
    _others(memory)
    lessons = [
        make_lesson(memory, text, refs="src/app.py", day=date(2026, 7, 1 + i))
        for i, text in enumerate(
            [
                "Grafana alert thresholds are kept in ops/alerts.yml",
                "Use UTC everywhere in the scheduler",
                "The mobile app pins its TLS certificate",
            ]
        )
    ]

    # What the first detector made: three unrelated lessons chained through a shared file.
    def old(status, ids):
        c = PromotionCandidate.objects.create(
            memory=memory,
            text=lessons[0].text,
            category="PATTERN",
            engine="offline",
            status=status,
            evidence={"lessons": ids, "confirmations": []},
            fingerprint="x",
            supporting_state={str(lesson.pk): {"hash": lesson.content_hash} for lesson in lessons if lesson.pk in ids},
        )
        c.supporting.set([lesson for lesson in lessons if lesson.pk in ids])
        return c

    pending = old("pending", [lesson.pk for lesson in lessons])
    rejected = old("rejected", [lesson.pk for lesson in lessons[:2]])
    result = promotion_detect(memory=memory)
    pending.refresh_from_db()
    rejected.refresh_from_db()
    assert pending.status == "superseded" and "Re-evaluated" in pending.reason
    assert rejected.status == "rejected"
    assert result.superseded == [pending]
    assert promotion_detect(memory=memory).superseded == []


def test_an_old_candidate_that_is_still_a_group_is_kept(memory, themed):
    themed(3)
    (candidate,) = promotion_detect(memory=memory).created
    PromotionCandidate.objects.filter(pk=candidate.pk).update(detector="")
    result = promotion_detect(memory=memory)
    candidate.refresh_from_db()
    assert result.superseded == [] and result.created == []
    assert candidate.status == "pending" and candidate.detector == "words-3"


def test_the_redetect_command_re_evaluates_old_candidates_once(memory, themed):
    import io

    from django.core.management import call_command

    themed(3)
    (kept,) = promotion_detect(memory=memory).created
    PromotionCandidate.objects.filter(pk=kept.pk).update(detector="")
    out = io.StringIO()
    call_command("redetect_promotions", stdout=out)
    kept.refresh_from_db()
    assert kept.status == "pending" and kept.detector == "words-3"
    assert "re-evaluated 1 memory; 0 pending candidates of an earlier detector left" in out.getvalue()
    call_command("redetect_promotions", stdout=out)
    assert "re-evaluated 0 memories" in out.getvalue()


LOCK_ORDER = [
    (
        "Two transfers between the same accounts deadlocked: post_transfer() locks the source row, then the destination",
        date(2026, 1, 14),
    ),
    (
        "Lock both account rows in ascending id order in post_transfer(), whichever is source or destination",
        date(2026, 2, 4),
    ),
    (
        "Deadlock again on account rows during month-end transfers; the lock order still followed source then destination",
        date(2026, 2, 19),
    ),
]
LOOK_ALIKE = ("post_transfer() refuses a transfer out of a frozen source account and answers 409", date(2026, 1, 30))
LEDGER_PATH = "src/ledger/transfers.py"


# A memory needs some size before look-alikes are told apart (detection.TRIM_MIN_LESSONS).
MORE_LESSONS = [
    "Sentry releases are tagged with the git SHA by the deploy job",
    "The mobile app reads its API base URL from the remote config",
    "Search results are cached for five minutes per query and locale",
    "Staging uses a copy of production data with emails scrambled",
    "The cron container runs in UTC; schedules are written in UTC",
    "Image uploads are resized by a Lambda before they reach the bucket",
    "Admin users must enable two-factor login before their first change",
    "The GraphQL gateway rejects queries deeper than ten levels",
    "Translations are pulled from the vendor every night at 02:00",
    "Slow query log threshold on the primary database is 500 ms",
]


def test_a_look_alike_tied_to_one_member_leaves_the_group():
    texts = LOCK_ORDER + [LOOK_ALIKE] + [(t, date(2025, 12, 1)) for t in OTHER_LESSONS + MORE_LESSONS]
    paths = {i: [LEDGER_PATH] for i in range(1, 5)}
    facts = _facts(texts, paths)
    groups = detection.find_groups(facts, min_dates=3)
    assert [g.lesson_ids for g in groups] == [[1, 2, 3]]


def test_loose_member_trimming_keeps_a_group_whose_members_are_tied_to_each_other():
    class Table:
        """Similarities given by hand: 0-1-2 restate one lesson, 3 is close to 0 only."""

        scores = {(0, 1): 0.30, (0, 2): 0.25, (1, 2): 0.28, (0, 3): 0.30, (1, 3): 0.04, (2, 3): 0.05}
        threshold = detection.LINK_SIMILARITY

        def __call__(self, p, q):
            return self.scores[min(p, q), max(p, q)]

        specific = __call__

    members, mean = detection.trim_loose_members([0, 1, 2, 3], Table())
    assert members == [0, 1, 2]
    assert mean == pytest.approx((0.30 + 0.25 + 0.28) / 3)
    assert detection.trim_loose_members([0, 1, 2], Table())[0] == [0, 1, 2]


def test_a_files_subject_words_count_less_between_lessons_citing_it():
    texts = [
        ("The refund endpoint token must carry the refunds:write scope", date(2026, 5, 1)),
        ("Refund endpoint pagination ignores the token page parameter", date(2026, 5, 9)),
        ("Refund endpoint logs every token it rejects", date(2026, 5, 20)),
    ] + [(t, date(2025, 12, 1)) for t in OTHER_LESSONS]
    plain = detection.Similarity(_facts(texts))
    cited = detection.Similarity(
        _facts(texts, {1: ["src/api/refunds.py"], 2: ["src/api/refunds.py"], 3: ["src/api/refunds.py"]})
    )
    # "refund", "endpoint" and "token" are in all three lessons citing refunds.py: they name the file's
    # subject. Clustering still sees them in full; telling a look-alike from a restatement does not.
    assert cited(0, 1) == plain(0, 1)
    assert cited.specific(0, 1) < plain.specific(0, 1) == plain(0, 1)
    assert cited.specific(0, 1) == pytest.approx(plain(0, 1) * (1 - detection.FILE_TOPIC_WEIGHT), rel=0.35)


def test_a_small_memory_keeps_a_restatement_worded_further_off(memory):
    # Three lessons and nothing else: too few for word weights to tell a look-alike, so none is trimmed.
    lessons = [
        make_lesson(memory, text, refs="src/webhooks.py#L10", day=date(2026, 1, 1 + i))
        for i, text in enumerate(
            [
                "Verify the webhook signature before parsing the payload",
                "Webhook payload parsing happens after signature verification",
                "Verify webhook signatures first; parsing before it accepted forged events",
            ]
        )
    ]
    (candidate,) = promotion_detect(memory=memory).created
    assert set(candidate.supporting.all()) == set(lessons)
