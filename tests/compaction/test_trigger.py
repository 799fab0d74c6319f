"""Working memory over its line limit or char budget gets a proposal, once, through the Celery task."""

import pytest

from memory.compaction.selectors import compaction_needed
from memory.models import CompactionProposal
from memory.signals import working_lessons_added
from tests.factories import make_lesson

pytestmark = pytest.mark.django_db


@pytest.fixture
def send(django_capture_on_commit_callbacks):
    """Send working_lessons_added as the writers do, running what receivers queue for after commit."""

    def do(memory, lessons):
        with django_capture_on_commit_callbacks(execute=True):
            working_lessons_added.send(sender=None, memory_id=memory.pk, lesson_ids=[lesson.pk for lesson in lessons])

    return do


@pytest.fixture
def add(send):
    def do(memory, count):
        lessons = [make_lesson(memory, f"Lesson {i} about src/mod_{i}.py") for i in range(count)]
        send(memory, lessons)
        return lessons

    return do


def test_under_the_limits_nothing_happens(memory, add):
    memory.max_working_lines = 5
    memory.save()
    add(memory, 5)
    assert compaction_needed(memory) == ""
    assert not CompactionProposal.objects.exists()


def test_over_the_line_limit_a_proposal_is_computed_once(memory, add):
    memory.max_working_lines = 5
    memory.compaction_target_lines = 3
    memory.save()
    add(memory, 6)
    proposal = CompactionProposal.objects.get()
    assert proposal.status == "pending" and proposal.trigger == "threshold"
    assert proposal.trigger_detail == "6 working lessons, over the limit of 5"
    assert proposal.created_by is None and proposal.lines.count() == 3
    add(memory, 1)
    assert CompactionProposal.objects.count() == 1  # one pending at a time


def test_over_the_char_budget_a_proposal_is_computed(memory, add):
    memory.working_char_budget = 200
    memory.save()
    add(memory, 4)
    proposal = CompactionProposal.objects.get()
    assert proposal.trigger_detail.startswith("working.md is ") and "over the budget of 200" in proposal.trigger_detail


def test_core_lessons_do_not_count(memory, add):
    memory.max_working_lines = 2
    memory.save()
    for i in range(5):
        make_lesson(memory, f"Core pattern {i} in src/c{i}.py", category="PATTERN", tier="core")
    add(memory, 2)
    assert not CompactionProposal.objects.exists()


def test_an_llm_persona_without_a_key_gets_an_invalid_proposal_with_the_reason(memory, add, settings):
    settings.ANTHROPIC_API_KEY = ""
    memory.persona.provider = "anthropic"
    memory.persona.save()
    memory.max_working_lines = 1
    memory.save()
    add(memory, 2)
    proposal = CompactionProposal.objects.get()
    assert proposal.status == "invalid" and proposal.engine == "anthropic"
    # A missing key is a clear error on the proposal, never a silent switch to the offline compactor.
    assert "ANTHROPIC_API_KEY is not set" in proposal.validation_errors[0]


def test_an_llm_persona_uses_its_engine(memory, monkeypatch, send):
    from tests.compaction.helpers import ScriptedEngine

    memory.persona.provider = "openai"
    memory.persona.save()
    memory.max_working_lines = 1
    memory.save()
    engines = []

    def fake_get_engine(persona, *, memory=None):
        engines.append(ScriptedEngine(f"- [OBSERVATION] Everything about src/mod_0.py {{ids: {first.pk}}}"))
        return engines[-1]

    monkeypatch.setattr("memory.compaction.services.get_engine", fake_get_engine)
    first = make_lesson(memory, "Only lesson about src/mod_0.py")
    send(memory, [first])
    assert not CompactionProposal.objects.exists()  # one lesson is not over a limit of one
    second = make_lesson(memory, "Same lesson about src/mod_0.py")
    send(memory, [second])
    proposal = CompactionProposal.objects.get()
    assert len(engines) == 1 and proposal.engine == "scripted"
    assert proposal.status == "pending", proposal.validation_errors
    assert [line.kind for line in proposal.lines.all()] == ["rewritten"]
