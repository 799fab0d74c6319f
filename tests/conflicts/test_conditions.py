"""A later lesson saying a temporary lesson's condition has happened proposes retiring it."""

from datetime import date

import pytest
import time_machine

from memory import services
from memory.conflicts.expiry import Condition, condition_met
from memory.conflicts.services import _conditions_met, conflict_keep_both, conflict_keep_newer, conflicts_detect
from memory.models import LessonConflict, LessonStatus
from memory.selectors import compile_memory
from memory.tokens import agent_token_create
from tests.api.conftest import AgentClient, memory_url
from tests.factories import make_lesson

ACTOR = services.Actor.system("test")


@pytest.fixture
def temporary(memory):
    return make_lesson(
        memory,
        "Skip the e2e suite until the 2.3 rollout reaches 100 %.",
        day=date(2026, 1, 9),
        expires_when="the 2.3 rollout reaches 100 %",
    )


def test_a_lesson_reporting_the_condition_proposes_it_and_keeping_it_retires_the_temporary_one(memory, temporary):
    later = make_lesson(memory, "The 2.3 rollout reached 100 % today.", day=date(2026, 3, 1))
    assert conflicts_detect(memory=memory, lesson_ids=[later.pk]) == (1, 0)
    conflict = LessonConflict.objects.get()
    assert (conflict.older, conflict.newer, conflict.relation, conflict.status) == (
        temporary,
        later,
        "supersedes",
        "pending",
    )
    assert "the 2.3 rollout reaches 100 %" in conflict.evidence and "reached" in conflict.evidence

    conflict_keep_newer(conflict=conflict, actor=ACTOR)
    temporary.refresh_from_db()
    assert (temporary.status, temporary.superseded_by) == (LessonStatus.SUPERSEDED, later)
    memory.refresh_from_db()
    assert "Skip the e2e suite" not in compile_memory(memory).text
    # Nothing lost: reverting the decision brings the temporary lesson back.
    services.batch_revert(batch=LessonConflict.objects.get().batch, actor=ACTOR)
    temporary.refresh_from_db()
    assert temporary.status == LessonStatus.ACTIVE


@pytest.mark.parametrize(
    "text",
    [
        "The 2.3 rollout is at 50 %.",
        "Once the 2.3 rollout reaches 100 %, run the e2e suite again.",
        "The 2.3 rollout has not reached 100 % yet.",
        "Has the 2.3 rollout reached 100 %?",
        "The 2.4 rollout reached 100 %.",
        "The e2e suite is done in 4 minutes.",
    ],
)
def test_lessons_that_name_the_condition_without_meeting_it_propose_nothing(memory, temporary, text):
    later = make_lesson(memory, text, day=date(2026, 3, 1))
    conflicts_detect(memory=memory, lesson_ids=[later.pk])
    assert not LessonConflict.objects.filter(older=temporary).exists()


def test_only_a_later_lesson_and_only_while_the_temporary_one_is_served(memory, temporary):
    make_lesson(memory, "The 2.3 rollout reached 100 % in the test region.", day=date(2026, 1, 2))
    conflicts_detect(memory=memory)
    assert not LessonConflict.objects.exists()
    services.lesson_set_expiry(
        lesson=temporary, expires_on=date(2026, 2, 1), expires_when="the 2.3 rollout reaches 100 %", actor=ACTOR
    )
    later = make_lesson(memory, "The 2.3 rollout reached 100 % today.", day=date(2026, 3, 1))
    with time_machine.travel(date(2026, 3, 1)):  # past its expires_on: no longer served, nothing to retire
        conflicts_detect(memory=memory, lesson_ids=[later.pk])
    assert not LessonConflict.objects.exists()


def test_a_pair_kept_as_both_is_never_proposed_again(memory, temporary):
    later = make_lesson(memory, "Upstream fixed #1234; the 2.3 rollout reached 100 % as well.", day=date(2026, 3, 1))
    conflicts_detect(memory=memory, lesson_ids=[later.pk])
    conflict_keep_both(conflict=LessonConflict.objects.get(), actor=ACTOR)
    assert conflicts_detect(memory=memory) == (0, 0)
    assert LessonConflict.objects.count() == 1


def test_an_agent_reporting_it_through_the_api_is_checked_after_the_batch(
    client, persona, project, memory, temporary, settings, django_capture_on_commit_callbacks
):
    settings.CELERY_TASK_ALWAYS_EAGER = True
    agent = AgentClient(client, agent_token_create(persona=persona, name="tests")[1])
    with django_capture_on_commit_callbacks(execute=True):
        response = agent.post(
            memory_url(persona, project, "lessons"),
            {"lessons": [{"tool": "log_learning", "text": "The 2.3 rollout reached 100 % this morning."}]},
        )
    assert response.status_code == 201
    conflict = LessonConflict.objects.get()
    assert (conflict.older, conflict.newer_id) == (temporary, response.json()["lessons"][0]["id"])


def test_the_temporary_lessons_are_read_in_one_query(memory, temporary, django_assert_num_queries):
    for i in range(5):
        make_lesson(memory, f"Hold release {i} until PAY-{i} is merged.", expires_when=f"PAY-{i} is merged")
    later = [make_lesson(memory, f"PAY-{i} was merged.", day=date(2026, 3, 1)) for i in range(3)]
    with django_assert_num_queries(1):
        found = _conditions_met(memory=memory, lessons=later, known=set())
    assert len(found) == 3


@pytest.mark.parametrize(
    "condition, text, met",
    [
        ("upstream fixes #1234", "Upstream fixed #1234 in 2.2.1.", True),
        ("upstream fixes #1234", "Upstream fixed #12345.", False),
        ("upstream fixes #1234", "Waiting for #1234 to be fixed.", False),
        ("upstream fixes #1234", "Upstream closed #1234 as won't fix.", False),
        ("the migration week", "The migration week is over.", True),
        ("the migration week", "The migration week starts on Monday.", False),
        ("Django 5.2 ships", "Django 5.2 shipped last week.", True),
        ("Django 5.2 ships", "Django 5.2 ships next month.", False),
        ("the reindex finishes", "The reindex finished overnight.", True),
        ("the reindex finishes", "The reindex is half finished.", False),
        ("Freigabe von Version 4.2", "Version 4.2 wurde heute freigegeben.", True),
        ("Freigabe von Version 4.2", "Version 4.2 wird im April freigegeben.", False),
        ("Freigabe von Version 4.2", "Version 4.2 ist noch nicht freigegeben.", False),
        ("se publique la versión 3.1 del SDK", "Ya se publicó la versión 3.1 del SDK.", True),
        ("se publique la versión 3.1 del SDK", "Todavía no se publicó la versión 3.1 del SDK.", False),
        ("se publique la versión 3.1 del SDK", "La versión 3.1 del SDK se publicará en marzo.", False),
    ],
)
def test_the_condition_rule(condition, text, met):
    assert bool(condition_met(Condition.read(1, condition), text)) is met
