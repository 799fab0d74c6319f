from datetime import date

import pytest

from memory import services
from memory.models import PromotionCandidate
from memory.promotions import detection
from memory.promotions import text as analysis
from memory.promotions.services import promotion_detect, promotion_reject
from tests.factories import SYSTEM, make_lesson

pytestmark = pytest.mark.django_db


def test_same_theme_on_two_dates_is_not_a_candidate(memory, themed):
    themed(2)
    assert promotion_detect(memory=memory).created == []
    assert not PromotionCandidate.objects.exists()


def test_same_theme_on_three_dates_is_one_candidate(memory, themed):
    lessons = themed(3)
    result = promotion_detect(memory=memory)
    assert len(result.created) == 1
    candidate = result.created[0]
    assert set(candidate.supporting.all()) == set(lessons)
    assert candidate.distinct_dates == 3
    assert candidate.status == "pending"
    assert candidate.engine == "offline"


def test_three_lessons_on_the_same_date_are_not_enough(memory):
    for text in (
        "Cache keys include the tenant id in src/cache.py",
        "Tenant id belongs in every cache key src/cache.py",
        "Every cache key in src/cache.py carries the tenant id",
    ):
        make_lesson(memory, text, refs="src/cache.py", day=date(2026, 2, 1))
    assert promotion_detect(memory=memory).created == []


def test_different_themes_sharing_common_words_are_not_grouped(memory):
    texts = [
        "Always run the database migration check before deploying the service",
        "Always run the linter check before merging the service code",
        "Always run the load test check before scaling the service cluster",
        "Always run the backup check before rotating the service credentials",
    ]
    for i, text in enumerate(texts):
        make_lesson(memory, text, refs=f"src/area_{i}.py", day=date(2026, 3, 1 + i))
    assert promotion_detect(memory=memory).created == []


def test_shared_words_with_a_shared_file_group_lessons(memory):
    make_lesson(
        memory,
        "Retry budget for the payment client is three attempts",
        refs="src/pay/client.py#L40",
        day=date(2026, 1, 1),
    )
    make_lesson(
        memory,
        "Payment client retries stop after three attempts with jitter",
        refs="src/pay/client.py#L44",
        day=date(2026, 1, 5),
    )
    make_lesson(
        memory,
        "Keep the payment client retry budget at three attempts to avoid double charges",
        refs="src/pay/client.py",
        day=date(2026, 1, 9),
    )
    (candidate,) = promotion_detect(memory=memory).created
    assert candidate.supporting.count() == 3


def test_identical_text_on_three_dates_is_a_candidate(memory):
    for day in (1, 2, 3):
        make_lesson(memory, "Feature flags live in config/flags.yml.", day=date(2026, 4, day))
    (candidate,) = promotion_detect(memory=memory).created
    assert candidate.supporting.count() == 3


def test_confirmations_count_as_dates(memory):
    lesson = make_lesson(memory, "Use the read replica for reports in src/reports/query.py", day=date(2026, 5, 1))
    services.lesson_confirm(lesson=lesson, confirmed_on=date(2026, 5, 2))
    assert promotion_detect(memory=memory).created == []
    services.lesson_confirm(lesson=lesson, confirmed_on=date(2026, 5, 3))
    (candidate,) = promotion_detect(memory=memory).created
    assert list(candidate.supporting.all()) == [lesson]


def test_threshold_is_per_memory(memory, themed):
    memory.promotion_threshold = 4
    memory.save()
    themed(3)
    assert promotion_detect(memory=memory).created == []


def test_running_detection_twice_creates_nothing_new(memory, themed):
    themed(3)
    assert len(promotion_detect(memory=memory).created) == 1
    again = promotion_detect(memory=memory)
    assert again.created == [] and again.superseded == []
    assert PromotionCandidate.objects.count() == 1


def test_new_evidence_replaces_the_pending_candidate(memory, themed):
    themed(3)
    (first,) = promotion_detect(memory=memory).created
    make_lesson(
        memory,
        "Stripe webhook signature verification comes before payload parsing, always",
        refs="src/billing/webhooks.py",
        day=date(2026, 1, 20),
    )
    result = promotion_detect(memory=memory)
    assert len(result.created) == 1 and result.superseded == [first]
    first.refresh_from_db()
    assert first.status == "superseded"
    assert result.created[0].supporting.count() == 4


def test_rejected_group_stays_rejected_until_a_new_lesson_confirms_it(memory, themed, approver):
    themed(3)
    (first,) = promotion_detect(memory=memory).created
    promotion_reject(candidate=first, actor=services.Actor.for_user(approver), reason="too specific")
    assert promotion_detect(memory=memory).created == []
    make_lesson(
        memory,
        "Stripe webhook payloads are parsed only once the signature is verified",
        refs="src/billing/webhooks.py",
        day=date(2026, 2, 2),
    )
    (second,) = promotion_detect(memory=memory).created
    assert second.supporting.count() == 4
    first.refresh_from_db()
    assert first.status == "rejected"


def test_edited_supporting_lesson_supersedes_the_pending_candidate(memory, themed):
    lessons = themed(3)
    (first,) = promotion_detect(memory=memory).created
    services.lesson_update(lesson=lessons[0], actor=SYSTEM, text=lessons[0].text + " (see runbook)")
    result = promotion_detect(memory=memory)
    first.refresh_from_db()
    assert first.status == "superseded"
    assert len(result.created) == 1  # the edited group still says the same thing


def test_offline_wording_is_the_most_specific_member_with_all_refs(memory):
    make_lesson(
        memory,
        "Queue consumers ack after the database commit in worker.py",
        refs="src/worker.py#L5",
        day=date(2026, 1, 1),
    )
    best = make_lesson(
        memory,
        "Queue consumers must ack only after the database commit succeeds in worker.py",
        refs="src/worker.py#L5-L9, src/db/tx.py#L3",
        day=date(2026, 1, 2),
    )
    make_lesson(
        memory,
        "Ack queue messages after the database commit, never before (worker.py)",
        refs="src/queue/ack.py",
        day=date(2026, 1, 3),
    )
    (candidate,) = promotion_detect(memory=memory).created
    assert candidate.text == best.text
    assert candidate.category == "PATTERN"
    assert candidate.refs[:2] == ["src/worker.py#L5-L9", "src/db/tx.py#L3"]
    assert sorted(candidate.refs[2:]) == ["src/queue/ack.py", "src/worker.py#L5"]


def test_significant_words_drop_stop_words_and_stem():
    assert analysis.significant_words("The tests should always use the fixtures") == {"test", "fixtur"}


def test_identifiers_and_paths_are_split_into_words():
    words = analysis.significant_words("handleEvent() in src/billing/webhook_handler.py retried")
    assert words == {"handl", "event", "bill", "webhook", "handler", "retri"}


def test_words_every_lesson_uses_do_not_group_at_scale():
    # A word in every lesson is too common to pair anything, so it is never used as a key.
    facts = [
        detection.LessonFacts(
            id=i,
            text_key=str(i),
            terms={"servic": 1, "deploy": 1, "check": 1, f"w{i}": 1},
            paths=frozenset({"src/app.py"}),
            dates=frozenset({date(2026, 1, 1 + i % 20)}),
        )
        for i in range(500)
    ]
    assert detection.detect(facts, min_dates=3) == []


def test_a_new_confirmation_is_new_evidence(memory, themed):
    lessons = themed(3)
    (first,) = promotion_detect(memory=memory).created
    services.lesson_confirm(lesson=lessons[1], confirmed_on=date(2026, 1, 25))
    (second,) = promotion_detect(memory=memory).created
    first.refresh_from_db()
    assert first.status == "superseded" and second.distinct_dates == 4


@pytest.mark.parametrize(
    "text, language",
    [
        ("Der Loader ist abgestürzt, weil das CRM eine neue Spalte geliefert hat", "german"),
        ("Nunca activar set -x en scripts que manejan secretos", "spanish"),
        ("handle_event() parsed the body before the signature check", "english"),
        ("create_charge()", "english"),
    ],
)
def test_the_language_is_guessed_from_stop_words(text, language):
    from memory.promotions.text import guess_language, tokens

    assert guess_language(tokens(text)) == language
