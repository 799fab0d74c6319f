"""Groups proposed by the model, through the real SDKs against the local fake server: paraphrases
the word rule misses, strict answers, the token budget, and re-detection sending only new lessons."""

from datetime import date

import pytest

from memory import services
from memory.models import DetectionRun, LLMCall, ModelGroup, ModelPlacement, PromotionCandidate
from memory.promotions.services import DetectionError, DetectionOverBudget, promotion_detect
from tests.factories import SYSTEM, make_lesson
from tests.promotions.conftest import grouping
from tests.promotions.model_oracle import ThemeOracle, request_parts, section_ids
from tests.promotions.paraphrases import PARAPHRASE_MEMORY

pytestmark = pytest.mark.django_db


def _use(memory, provider):
    memory.persona.provider = provider
    memory.persona.save()


@pytest.fixture
def openai(memory, llm_settings, llm_server):
    _use(memory, "openai")
    return llm_server.openai


def _paraphrases(memory, keys=None):
    """The paraphrase memory's lessons (or those named by `keys`), by key."""
    return {
        item["id"]: make_lesson(memory, item["text"], day=date.fromisoformat(item["date"]))
        for item in PARAPHRASE_MEMORY["lessons"]
        if keys is None or item["id"] in keys
    }


def _oracle(lessons):
    themes = {item["id"]: item["theme"] for item in PARAPHRASE_MEMORY["lessons"]}
    return ThemeOracle({lesson.pk: themes[key] for key, lesson in lessons.items()})


def _members(candidate):
    return set(candidate.supporting.values_list("pk", flat=True))


def _sent_ids(request, section="New lessons"):
    """Ids of the lessons a grouping request asked to place (or listed under another section)."""
    prompt, _ = request_parts(request)
    return set(section_ids(prompt, section))


def _grouping_requests(api):
    return [r for r in api.requests if request_parts(r)[1] == "propose_groups"]


def test_the_model_finds_restatements_the_word_rule_misses(memory, openai):
    lessons = _paraphrases(memory)
    ids = {key: lesson.pk for key, lesson in lessons.items()}
    _use(memory, "offline")
    (words_only,) = promotion_detect(memory=memory).created  # a decoy on the same table, two of three dates
    assert _members(words_only) == {ids["m1"], ids["m2"], ids["x4"]}
    _use(memory, "openai")
    openai.respond(_oracle(lessons))

    result = promotion_detect(memory=memory)

    found = {frozenset(_members(c)): c for c in result.created}
    retry = found[frozenset({ids["r1"], ids["r2"], ids["r3"]})]
    schedule = found[frozenset({ids["t1"], ids["t2"], ids["t3"]})]
    backfill = found[frozenset({ids["m1"], ids["m2"], ids["m3"]})]
    assert len(found) == 3
    assert (retry.found_by, retry.proposal_reason) == ("model", "Each restates retry-jitter.")
    assert schedule.found_by == "model" and schedule.distinct_dates == 3
    # The word rule's group joined the model's; the model's check then left the decoy out.
    assert backfill.found_by == "both" and f"left out: #{ids['x4']}" in backfill.verification_note
    words_only.refresh_from_db()
    assert words_only.status == "superseded"
    (grouped,) = _grouping_requests(openai)
    assert _sent_ids(grouped) == set(ids.values())
    assert grouped.json["tools"][0]["function"]["name"] == "propose_groups"
    assert LLMCall.objects.filter(purpose="promotion grouping", outcome="ok").count() == 1
    run = DetectionRun.objects.get(engine="openai")
    assert (run.engine, run.calls, run.created, run.lessons_sent) == ("openai", len(openai.requests), 3, 13)
    assert (run.tokens_in, run.tokens_out) == (10 * run.calls, 5 * run.calls)


def test_anthropic_groups_through_its_sdk(memory, llm_settings, llm_server):
    _use(memory, "anthropic")
    lessons = _paraphrases(memory, {"r1", "r2", "r3", "x1"})
    llm_server.anthropic.respond(_oracle(lessons))

    (candidate,) = promotion_detect(memory=memory).created

    assert _members(candidate) == {lessons[k].pk for k in ("r1", "r2", "r3")}
    assert candidate.found_by == "model"
    assert llm_server.anthropic.requests[0].json["tools"][0]["name"] == "propose_groups"


@pytest.mark.parametrize(
    "answer, message",
    [
        ("unknown id", "not sent in this batch: [99999]"),
        ("overlapping", "is in more than one group"),
        ("broken json", "not valid JSON"),
        ("no summary", "is new but has no summary"),
        ("unknown group", "joins a group 'G7' that was not offered"),
        ("text", "called propose_groups 0 times"),
    ],
)
def test_an_unusable_grouping_is_a_clear_error_and_changes_no_candidate(memory, openai, themed, answer, message):
    # A pending candidate that this run would otherwise replace (a fourth lesson is new evidence).
    _use(memory, "offline")
    first, second, third = themed(3)
    (before,) = promotion_detect(memory=memory).created
    _use(memory, "openai")
    fourth = make_lesson(
        memory,
        "Stripe webhook signature verification comes before payload parsing, always",
        refs="src/billing/webhooks.py",
        day=date(2026, 1, 20),
    )
    if answer == "unknown id":
        openai.tool_calls([grouping({"ids": [first.pk, 99999]})])
    elif answer == "overlapping":
        openai.tool_calls([grouping({"ids": [first.pk, second.pk]}, {"ids": [second.pk, third.pk]})])
    elif answer == "broken json":
        openai.tool_calls([("propose_groups", '{"groups": [{"ids": [1, 2')])
    elif answer == "no summary":
        openai.tool_calls([("propose_groups", {"groups": [{"ids": [first.pk, fourth.pk], "reason": "x"}]})])
    elif answer == "unknown group":
        openai.tool_calls([grouping({"existing": "G7", "ids": [fourth.pk]})])
    else:
        openai.text("They all say the same thing.")

    with pytest.raises(DetectionError) as failure:
        promotion_detect(memory=memory)

    assert message in str(failure.value) and "No candidate was changed" in str(failure.value)
    assert "Grouping batch 1" in str(failure.value)
    before.refresh_from_db()
    assert before.status == "pending"
    assert PromotionCandidate.objects.count() == 1
    assert not ModelPlacement.objects.exists() and not ModelGroup.objects.exists()
    run = DetectionRun.objects.get(engine="openai")
    assert run.status == "failed" and message in run.message and run.calls == 1
    assert len(openai.requests) == 1  # nothing checked or worded after a refused grouping


def test_the_budget_stops_a_run_before_any_call(memory, openai):
    memory.persona.detection_token_budget = 1_000
    memory.persona.save()
    _paraphrases(memory)

    with pytest.raises(DetectionOverBudget) as failure:
        promotion_detect(memory=memory)

    message = str(failure.value)
    assert "grouping 13 lessons in 1 batch" in message and "budget of 1,000 tokens" in message
    assert "would take about" in message and "No candidate was changed" in message
    assert openai.requests == [] and not PromotionCandidate.objects.exists()
    run = DetectionRun.objects.get()
    assert (run.status, run.calls) == ("over_budget", 0)


def test_the_budget_stops_before_the_checks_and_keeps_the_grouping_it_paid_for(memory, openai):
    memory.persona.detection_token_budget = 3_000
    memory.persona.save()
    lessons = _paraphrases(memory)
    oracle = _oracle(lessons)
    openai.respond(oracle)

    with pytest.raises(DetectionOverBudget, match=r"before checking and wording 3 groups: .* budget of 3,000"):
        promotion_detect(memory=memory)

    assert not PromotionCandidate.objects.exists()
    assert oracle.asked == {"propose_groups": 1}
    assert ModelGroup.objects.count() == 3 and ModelPlacement.objects.count() == 13
    memory.persona.detection_token_budget = 200_000
    memory.persona.save()

    assert len(promotion_detect(memory=memory).created) == 3
    assert oracle.asked["propose_groups"] == 1  # the grouping was not paid for twice


def test_re_detection_sends_only_the_new_lessons(memory, openai):
    lessons = _paraphrases(memory, {"r1", "r2", "t1", "t2", "x1", "x2"})
    oracle = _oracle(lessons)
    openai.respond(oracle)
    assert promotion_detect(memory=memory).created == []  # two dates each: below the threshold
    assert ModelGroup.objects.count() == 2

    added = _paraphrases(memory, {"r3", "t3"})
    oracle.themes.update(_oracle(added).themes)
    result = promotion_detect(memory=memory)

    first, second = _grouping_requests(openai)
    assert _sent_ids(first) == {lesson.pk for lesson in lessons.values()}
    assert _sent_ids(second) == {added["r3"].pk, added["t3"].pk}
    # As context: a summary per group, and the earlier lessons the model left alone; no grouped lesson again.
    prompt, _ = request_parts(second)
    assert "G1 | 2 | theme: " in prompt and "G2 | 2 | theme: " in prompt
    assert _sent_ids(second, "Earlier lessons") == {lessons["x1"].pk, lessons["x2"].pk}
    assert not any(lessons[k].text in prompt for k in ("r1", "r2", "t1", "t2"))
    assert {frozenset(_members(c)) for c in result.created} == {
        frozenset(lesson.pk for k, lesson in {**lessons, **added}.items() if k.startswith(p)) for p in ("r", "t")
    }
    assert {c.found_by for c in result.created} == {"model"}
    assert DetectionRun.objects.order_by("-id").first().lessons_sent == 2

    requests = len(openai.requests)
    assert promotion_detect(memory=memory).created == []
    assert len(openai.requests) == requests  # nothing new: no call at all


def test_an_edited_lesson_is_shown_to_the_model_again(memory, openai):
    lessons = _paraphrases(memory, {"r1", "r2", "x1"})
    oracle = _oracle(lessons)
    openai.respond(oracle)
    promotion_detect(memory=memory)
    services.lesson_update(
        lesson=lessons["x1"], actor=SYSTEM, text="The billing page shows prices in euros for every customer"
    )

    promotion_detect(memory=memory)

    assert _sent_ids(_grouping_requests(openai)[-1]) == {lessons["x1"].pk}
    assert ModelPlacement.objects.count() == 3


def test_a_restatement_meets_an_earlier_lesson_left_alone_in_another_run(memory, openai):
    lessons = _paraphrases(memory, {"t1", "x1"})
    oracle = _oracle(lessons)
    openai.respond(oracle)
    promotion_detect(memory=memory)
    assert not ModelGroup.objects.exists()  # nothing to group t1 with yet

    for key in ("t2", "t3"):
        lessons.update(_paraphrases(memory, {key}))
        oracle.themes.update(_oracle(lessons).themes)
        result = promotion_detect(memory=memory)

    (candidate,) = result.created
    assert _members(candidate) == {lessons[k].pk for k in ("t1", "t2", "t3")}
    second = _grouping_requests(openai)[1]
    assert _sent_ids(second) == {lessons["t2"].pk}
    assert _sent_ids(second, "Earlier lessons") == {lessons["t1"].pk, lessons["x1"].pk}
    assert ModelPlacement.objects.get(lesson=lessons["t1"]).group is not None


def test_a_run_after_an_append_uses_the_models_groups_without_a_grouping_call(memory, openai):
    from memory.promotions.services import promotion_detect_run

    lessons = _paraphrases(memory)
    openai.respond(_oracle(lessons))
    first = promotion_detect(memory=memory)
    assert len(_grouping_requests(openai)) == 1 and len(first.created) == 3
    make_lesson(memory, "Retries of the export job now wait a random 1-5 s before each attempt", day=date(2026, 4, 2))

    promotion_detect_run(memory_id=memory.pk, place_new=False)

    # The appended lesson waits for the nightly run (or Detect now) to be placed by the model, and
    # the model's groups stay proposed meanwhile.
    assert len(_grouping_requests(openai)) == 1
    assert PromotionCandidate.objects.filter(memory=memory, status="pending").count() == 3
    promotion_detect_run(memory_id=memory.pk)
    assert len(_grouping_requests(openai)) == 2
