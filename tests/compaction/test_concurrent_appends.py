"""Agents append while an approver applies a compaction, on separate database connections: nothing is lost."""

import threading
from datetime import date, timedelta

import pytest
from django.db import connections

from memory import services
from memory.api.services import agent_lessons_append
from memory.compaction.services import compaction_apply, compaction_propose
from memory.models import AgentToken, CompactionProposal, Lesson
from tests.conftest import race_needs_postgres
from tests.factories import make_lesson

APPENDERS = 6
APPENDS_EACH = 10


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_appends_racing_an_apply_all_survive_and_the_reviewed_set_is_what_gets_compacted(memory, approver):
    race_needs_postgres()

    for i in range(40):
        make_lesson(
            memory,
            f"Retry finding {i % 20} in src/queue/worker_{i % 20}.py",
            refs=f"src/queue/worker_{i % 20}.py#L{i % 20 + 1}",
            day=date(2026, 1, 1) + timedelta(days=i),
        )
    memory.compaction_target_lines = 20
    memory.save()
    proposal = compaction_propose(memory=memory, actor=services.Actor.for_user(approver))
    assert proposal.status == "pending", proposal.validation_errors
    covered = set(proposal.input_lesson_ids)
    token = AgentToken.objects.create(persona=memory.persona, prefix="nwm_race0001", token_hash="r" * 64)

    start = threading.Barrier(APPENDERS + 1)
    midway = threading.Event()  # the apply starts while the agents are in the middle of their appends
    appended, outcome, errors = [], {}, []

    def append(worker):
        try:
            start.wait(timeout=10)
            for n in range(APPENDS_EACH):
                _, results = agent_lessons_append(
                    memory=memory,
                    token=token,
                    items=[
                        {
                            "tool": "log_learning",
                            "text": f"Agent {worker} learned thing {n} about src/w{worker}/m{n}.py",
                        }
                    ],
                )
                appended.extend(lesson.pk for lesson, how in results if how == "created")
                if len(appended) >= APPENDERS * APPENDS_EACH // 3:
                    midway.set()
        except Exception as exc:  # surfaced by the assertions below
            errors.append(repr(exc))
        finally:
            connections.close_all()

    def apply():
        try:
            start.wait(timeout=10)
            midway.wait(timeout=30)
            outcome["batch"] = compaction_apply(proposal=proposal, actor=services.Actor.for_user(approver))
        except Exception as exc:
            outcome["error"] = repr(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=append, args=(w,)) for w in range(APPENDERS)]
    threads.append(threading.Thread(target=apply))
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)

    assert not errors, errors
    assert "error" not in outcome, outcome
    assert len(appended) == APPENDERS * APPENDS_EACH
    # every appended lesson is active and untouched by the compaction
    assert Lesson.objects.filter(pk__in=appended, status="active", tier="working").count() == len(appended)
    batch = outcome["batch"]
    assert not batch.changes.filter(lesson_id__in=appended).exists()
    # the compaction retired exactly lessons of the reviewed set, and only those
    retired = set(batch.changes.exclude(action="create").values_list("lesson_id", flat=True))
    assert retired and retired <= covered
    assert CompactionProposal.objects.get(pk=proposal.pk).status == "applied"
    working = set(Lesson.objects.filter(memory=memory, tier="working", status="active").values_list("pk", flat=True))
    created = set(batch.changes.filter(action="create").values_list("lesson_id", flat=True))
    assert working == (covered - retired) | created | set(appended)
