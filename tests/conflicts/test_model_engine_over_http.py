"""The model engine for conflicts, through the real SDKs against the local fake server: every pair the
model returns reaches a LessonConflict, the budget bounds each call and each run, only lessons the
model has not compared are sent, and whatever the model gets wrong is dropped, fixed or logged."""

import io
from datetime import date

import pytest
from django.core.management import call_command

from memory import services
from memory.conflicts import evaluation
from memory.conflicts.model_runs import conflicts_model_detect
from memory.conflicts.services import conflicts_detect
from memory.models import ConflictModelCheck, LessonConflict, LLMCall
from tests.conflicts.model_oracle import ConflictOracle, sent_lessons
from tests.factories import SYSTEM, make_lesson
from tests.promotions.model_oracle import request_parts

pytestmark = pytest.mark.django_db

CORPUS = {memory.name: memory for memory in evaluation.load_corpus(evaluation.DEFAULT_CORPUS)}


@pytest.fixture
def model_settings(llm_settings):
    llm_settings.CONFLICTS_ENGINE = "openai"
    return llm_settings


@pytest.fixture
def openai(model_settings, llm_server):
    return llm_server.openai


def _corpus_lessons(memory, *names):
    """The lessons of these corpus memories, created in `memory`: {corpus key: lesson}."""
    made = {}
    for name in names:
        for item in CORPUS[name].lessons:
            category = "DECISION" if item.tier == "core" else "OBSERVATION"
            made[item.key] = make_lesson(memory, item.text, tier=item.tier, category=category, day=item.lesson_date)
    return made


def _labelled(*names):
    """[(older key, newer key, relation, kind)] of the conflicts labelled in these corpus memories."""
    out = []
    for name in names:
        keys = {lesson.id: lesson.key for lesson in CORPUS[name].lessons}
        out += [(keys[a], keys[b], label, kind) for a, b, label, kind in CORPUS[name].pairs if label != "compatible"]
    return out


def _pairs():
    return {frozenset((c.older_id, c.newer_id)): c for c in LessonConflict.objects.all()}


def _prompts(api):
    return [request_parts(r)[0] for r in api.requests]


def test_every_pair_the_model_returns_becomes_one_conflict_next_to_the_offline_ones(
    memory, openai, django_capture_on_commit_callbacks
):
    lessons = _corpus_lessons(memory, "web-en", "ops-implicit")
    oracle = ConflictOracle()
    openai.respond(oracle)

    with django_capture_on_commit_callbacks(execute=True):
        offline, _ = conflicts_detect(memory=memory)  # queues the model's pass once it commits

    conflicts = _pairs()
    assert len(openai.requests) == 1  # 77 lessons fit in one call
    answered = {frozenset((a, b)) for a, b, _ in oracle.answered}
    assert answered and answered <= conflicts.keys()  # every pair the model returned is stored
    for older, newer, relation, kind in _labelled("web-en", "ops-implicit"):
        conflict = conflicts[frozenset((lessons[older].pk, lessons[newer].pk))]
        assert conflict.relation == relation
        if relation == "supersedes":
            assert (conflict.older_id, conflict.newer_id) == (lessons[older].pk, lessons[newer].pk)
        if kind == "implicit" and conflict.engine == "openai":
            assert conflict.evidence == f"Labelled {relation} (implicit)."
    implicit = [conflicts[frozenset((lessons[a].pk, lessons[b].pk))] for a, b, _, k in _labelled("ops-implicit")]
    assert {c.engine for c in implicit} == {"openai"}  # no shared words: only the model sees them
    both = [c for c in conflicts.values() if c.engine == "offline+openai"]
    assert len(both) == len(answered & {frozenset((c.older_id, c.newer_id)) for c in both}) > 10
    assert all("\nopenai: Labelled" in c.evidence for c in both)
    assert len(conflicts) == offline + len(answered) - len(both)  # a pair found by both is stored once
    assert ConflictModelCheck.objects.filter(memory=memory, engine="openai").count() == len(lessons)
    (call,) = LLMCall.objects.filter(purpose="conflict detection")
    assert (call.provider, call.memory, call.persona, call.outcome) == ("openai", memory, memory.persona, "ok")
    assert (call.tokens_in, call.tokens_out) == (10, 5)
    sent = openai.requests[0].json
    assert sent["tools"][0]["function"]["name"] == "report_conflicts"
    assert sent["max_completion_tokens"] == 2048


def test_anthropic_finds_an_implicit_conflict_through_its_sdk(memory, model_settings, llm_server):
    model_settings.CONFLICTS_ENGINE = "anthropic"
    lessons = _corpus_lessons(memory, "ops-implicit")
    llm_server.anthropic.respond(ConflictOracle())

    run = conflicts_model_detect(memory=memory)

    assert (run.engine, run.calls, run.errors) == ("anthropic", 1, [])
    assert run.created == len(_labelled("ops-implicit"))
    conflict = LessonConflict.objects.get(older=lessons["o1"], newer=lessons["o2"])
    assert (conflict.relation, conflict.engine, conflict.status) == ("supersedes", "anthropic", "pending")
    request = llm_server.anthropic.requests[0].json
    assert request["tools"][0]["name"] == "report_conflicts" and request["max_tokens"] == 2048
    assert LLMCall.objects.get(purpose="conflict detection").provider == "anthropic"


def test_a_memory_larger_than_a_call_sends_the_new_lesson_with_its_likeliest_neighbours(memory, openai, settings):
    settings.CONFLICTS_MODEL_LESSONS_PER_CALL = 6
    jenkins = make_lesson(
        memory, "Deploys go out through Jenkins.", category="PATTERN", refs="ci/deploy.yml", day=date(2025, 6, 1)
    )
    fillers = [
        make_lesson(memory, f"The report module {n} renders totals in euros.", day=date(2026, 1, 1 + n))
        for n in range(20)
    ]
    ship = make_lesson(
        memory, "We ship with GitHub Actions now.", category="PATTERN", refs="ci/deploy.yml", day=date(2026, 3, 4)
    )
    openai.respond(ConflictOracle())

    run = conflicts_model_detect(memory=memory, lesson_ids=[ship.pk])

    (prompt,) = _prompts(openai)
    texts, check = sent_lessons(prompt)
    assert check == {ship.pk} and len(texts) == 6
    assert jenkins.pk in texts  # same file and category, though the oldest lesson of all
    assert set(texts) - {ship.pk, jenkins.pk} == {f.pk for f in fillers[-4:]}  # then the most recent
    assert "The memory has 21 other lessons; the 5 listed" in prompt
    assert "checked against 5 of 21 others" in run.message
    assert LessonConflict.objects.get().older == jenkins


def test_the_run_budget_bounds_the_calls_and_the_rest_waits_for_the_next_run(memory, openai, settings):
    settings.CONFLICTS_MODEL_LESSONS_PER_CALL = 4  # two lessons to check per call
    settings.CONFLICTS_MODEL_CHARS_PER_RUN = 1  # one call per run
    lessons = [make_lesson(memory, f"Service {n} listens on its own port.", day=date(2026, 2, n)) for n in range(1, 7)]
    openai.respond(ConflictOracle(labels={}))

    runs = [conflicts_model_detect(memory=memory) for _ in range(4)]

    assert [r.calls for r in runs] == [1, 1, 1, 0]
    assert [r.postponed for r in runs[:3]] == [4, 2, 0]
    assert "4 lesson(s) left for the next run" in runs[0].message
    checks = [sent_lessons(p)[1] for p in _prompts(openai)]
    assert all(len(c) == 2 for c in checks)
    assert set().union(*checks) == {lesson.pk for lesson in lessons}
    assert all(len(sent_lessons(p)[0]) <= 4 for p in _prompts(openai))


def test_only_new_and_edited_lessons_are_sent_again_unless_a_full_pass_is_asked_for(
    memory, openai, django_capture_on_commit_callbacks
):
    lessons = _corpus_lessons(memory, "ops-implicit")
    openai.respond(ConflictOracle())
    conflicts_model_detect(memory=memory)
    assert conflicts_model_detect(memory=memory).calls == 0  # nothing new: no call

    newer = make_lesson(memory, "Deploys are triggered from the ArgoCD dashboard.", day=date(2026, 4, 1))
    services.lesson_update(lesson=lessons["o9"], actor=SYSTEM, text="Error reports go to Sentry, self-hosted.")
    conflicts_model_detect(memory=memory)

    assert sent_lessons(_prompts(openai)[-1])[1] == {newer.pk, lessons["o9"].pk}
    with django_capture_on_commit_callbacks(execute=True):
        call_command("detect_conflicts", "--memory", str(memory.pk), "--full", stdout=io.StringIO())
    assert len(sent_lessons(_prompts(openai)[-1])[1]) == len(lessons) + 1


def test_what_the_model_gets_wrong_is_dropped_or_fixed(memory, openai):
    old = make_lesson(memory, "Deploys go out through Jenkins.", day=date(2026, 1, 8))
    new = make_lesson(memory, "We ship with GitHub Actions now.", day=date(2026, 3, 4))
    other = make_lesson(memory, "Error reports go to Sentry.", day=date(2026, 1, 25))
    later = make_lesson(memory, "Exceptions are collected by Rollbar.", day=date(2026, 2, 25))
    openai.tool_calls(
        [
            (
                "report_conflicts",
                {
                    "conflicts": [
                        {"older": new.pk, "newer": old.pk, "relation": "supersedes", "reason": "CI moved."},
                        {"older": str(old.pk), "newer": str(new.pk), "relation": "supersedes", "reason": "again"},
                        {"older": 99999, "newer": new.pk, "relation": "supersedes", "reason": "unknown"},
                        {"older": new.pk, "newer": new.pk, "relation": "contradicts", "reason": "itself"},
                        {"older": other.pk, "newer": later.pk, "relation": "supersedes", "reason": "not asked"},
                        {"older": other.pk, "newer": new.pk, "relation": "maybe", "reason": "bad relation"},
                        "not a pair",
                    ]
                },
            )
        ]
    )

    run = conflicts_model_detect(memory=memory, lesson_ids=[new.pk])

    (conflict,) = LessonConflict.objects.all()
    assert (conflict.older, conflict.newer, conflict.relation) == (old, new, "supersedes")  # turned round
    assert conflict.evidence == "CI moved."
    assert run.errors == [] and "dropped 6 pair(s)" in run.message and "1 pair(s) turned round" in run.message
    assert LLMCall.objects.get(purpose="conflict detection").outcome == "ok"


@pytest.mark.parametrize(
    "answer, problem",
    [
        ("text", "did not call report_conflicts"),
        ("broken json", "not valid JSON"),
        ("no list", "lacks a list of conflicts"),
    ],
)
def test_an_unreadable_answer_is_an_engine_error_and_the_offline_findings_stay(
    memory, openai, django_capture_on_commit_callbacks, answer, problem
):
    make_lesson(memory, "Install frontend dependencies with npm install in web/.", day=date(2026, 1, 10))
    make_lesson(memory, "Install frontend dependencies with pnpm install in web/.", day=date(2026, 3, 2))
    if answer == "text":
        openai.text("I found no conflicts.")
    elif answer == "broken json":
        openai.tool_calls([("report_conflicts", '{"conflicts": [')])
    else:
        openai.tool_calls([("report_conflicts", {"pairs": []})])

    with django_capture_on_commit_callbacks(execute=True):
        assert conflicts_detect(memory=memory) == (1, 0)

    (kept,) = LessonConflict.objects.all()
    assert kept.engine == "offline"
    (call,) = LLMCall.objects.filter(purpose="conflict detection")
    assert call.outcome == "error" and problem in call.error and "openai answer not used" in call.error
    assert not ConflictModelCheck.objects.exists()  # the lessons are sent again next time


def test_a_failed_call_stops_the_run_and_its_lessons_wait(memory, openai):
    make_lesson(memory, "Deploys go out through Jenkins.", day=date(2026, 1, 8))
    make_lesson(memory, "We ship with GitHub Actions now.", day=date(2026, 3, 4))
    for _ in range(3):  # the first try and both retries
        openai.error(500, "upstream down")

    run = conflicts_model_detect(memory=memory)

    assert run.created == 0 and run.postponed == 2 and "HTTP 500" in run.errors[0]
    assert list(LLMCall.objects.filter(purpose="conflict detection").values_list("outcome", flat=True)) == ["error"] * 3
    openai.respond(ConflictOracle())
    assert conflicts_model_detect(memory=memory).created == 1


def test_a_missing_key_is_logged_and_nothing_breaks(memory, openai, settings):
    settings.OPENAI_API_KEY = ""
    make_lesson(memory, "Deploys go out through Jenkins.")

    run = conflicts_model_detect(memory=memory)

    assert "OPENAI_API_KEY" in run.errors[0] and not openai.requests
    assert "OPENAI_API_KEY" in LLMCall.objects.get(purpose="conflict detection").error


def test_the_offline_engine_queues_no_model_pass(memory, settings, django_capture_on_commit_callbacks):
    settings.CONFLICTS_ENGINE = "offline"
    lesson = make_lesson(memory, "Deploys go out through Jenkins.")
    with django_capture_on_commit_callbacks() as queued:
        conflicts_detect(memory=memory, lesson_ids=[lesson.pk])
    assert not [c for c in queued if "detect_with_model" in c.__qualname__]
    settings.CONFLICTS_ENGINE = "openai"
    with django_capture_on_commit_callbacks() as queued:
        conflicts_detect(memory=memory, lesson_ids=[lesson.pk])
    assert [c.__qualname__ for c in queued if "detect_with_model" in c.__qualname__] == [
        "conflicts_model_request.<locals>.enqueue[memory.conflicts.detect_with_model]"
    ]


def _scores(out, title):
    block = out.split(f" engine: {title}\n", 1)[1].split(" engine:", 1)[0]
    return {
        line.split()[0]: float(line.split()[1])
        for line in block.splitlines()
        if line.startswith("  ") and ":" not in line
    }


def test_the_eval_command_scores_the_model_engine_with_implicit_recall_apart(openai, capsys):
    openai.respond(ConflictOracle())

    call_command("eval_conflicts", "--engine", "openai", "--model", "gpt-test")

    out = capsys.readouterr().out
    offline, alone, stored = (
        _scores(out, t) for t in ("offline", "openai (gpt-test) alone", "offline + openai (gpt-test) (stored)")
    )
    assert {r.json["model"] for r in openai.requests} == {"gpt-test"}
    assert offline["implicit_recall"] == 0.0 and offline["precision"] >= 0.85
    for scores in (alone, stored):
        assert scores["precision"] == 1.0 and scores["explicit_recall"] == 1.0
        assert scores["implicit_recall"] == 1.0 and scores["false_alarms"] == 0.0 and scores["direction"] == 1.0
    assert f"model calls: {len(CORPUS)}," in out  # every corpus memory fits in one call
    assert "model error" not in out


def test_the_eval_command_keeps_to_the_budget(openai, capsys, settings):
    settings.CONFLICTS_MODEL_LESSONS_PER_CALL = 12
    openai.respond(ConflictOracle())

    call_command("eval_conflicts", "--engine", "openai", "--model", "gpt-test")

    assert len(openai.requests) > len(CORPUS)
    assert all(len(sent_lessons(p)[0]) <= 12 for p in _prompts(openai))
    assert _scores(capsys.readouterr().out, "openai (gpt-test) alone")["precision"] == 1.0


def test_the_model_is_the_personas_for_the_same_provider_unless_one_is_named(memory, openai, settings):
    make_lesson(memory, "Deploys go out through Jenkins.")
    memory.persona.provider, memory.persona.model_name = "openai", "gpt-of-the-persona"
    memory.persona.save()
    openai.respond(ConflictOracle(labels={}))
    conflicts_model_detect(memory=memory)
    settings.CONFLICTS_MODEL = "gpt-for-conflicts"
    ConflictModelCheck.objects.all().delete()
    conflicts_model_detect(memory=memory)
    memory.persona.provider = "anthropic"  # another provider: its model is not sent to OpenAI
    memory.persona.model_name = "claude-of-the-persona"
    memory.persona.save()
    settings.CONFLICTS_MODEL = ""
    ConflictModelCheck.objects.all().delete()
    conflicts_model_detect(memory=memory)

    assert [r.json["model"] for r in openai.requests] == [
        "gpt-of-the-persona",
        "gpt-for-conflicts",
        settings.OPENAI_DEFAULT_MODEL,
    ]
