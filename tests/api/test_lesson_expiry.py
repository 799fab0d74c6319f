"""PUT /api/v1/lessons/{id}/expiry — an agent dates (or undates) one of its working lessons."""

import json
from datetime import date

import pytest
import time_machine

from memory import services
from memory.models import Change, ChangeBatch, Lesson
from tests.api.conftest import memory_url
from tests.factories import MemoryFactory, make_lesson


def put(agent, lesson_id, body):
    return agent.client.put(
        f"/api/v1/lessons/{lesson_id}/expiry", body, content_type="application/json", headers=agent.headers
    )


def test_set_then_clear_an_expiry_each_a_recorded_agent_change(agent, memory):
    lesson = make_lesson(memory, "Skip the e2e suite until the 2.3 rollout reaches 100 %")
    version = memory.__class__.objects.get(pk=memory.pk).version

    response = put(agent, lesson.pk, {"expires_on": "2026-09-01", "expires_when": "the 2.3 rollout reaches 100 %"})
    assert response.status_code == 200, response.content
    data = response.json()
    assert (data["id"], data["expires_on"], data["expires_when"]) == (
        lesson.pk,
        "2026-09-01",
        "the 2.3 rollout reaches 100 %",
    )
    assert data["version"] == version + 1
    lesson.refresh_from_db()
    assert (lesson.expires_on, lesson.expires_when) == (date(2026, 9, 1), "the 2.3 rollout reaches 100 %")
    change = Change.objects.filter(lesson=lesson).latest("id")
    assert change.batch.kind == ChangeBatch.Kind.AGENT and change.batch.actor_label.startswith("agent token nwm_")
    assert change.after["expires_when"] == "the 2.3 rollout reaches 100 %"

    # The body is the whole expiry: what is left out is cleared.
    response = put(agent, lesson.pk, {"expires_on": "2026-10-01"})
    assert (response.json()["expires_on"], response.json()["expires_when"]) == ("2026-10-01", "")
    response = put(agent, lesson.pk, {})
    assert response.status_code == 200 and (response.json()["expires_on"], response.json()["expires_when"]) == (
        None,
        "",
    )
    lesson.refresh_from_db()
    assert (lesson.expires_on, lesson.expires_when) == (None, "")

    # A person can revert what the agent did.
    services.batch_revert(batch=Change.objects.filter(lesson=lesson).latest("id").batch, actor=services.Actor.system())
    lesson.refresh_from_db()
    assert lesson.expires_on == date(2026, 10, 1)


def test_the_same_expiry_again_writes_nothing(agent, memory):
    lesson = make_lesson(memory, "Use the legacy login until the SSO cutover")
    assert put(agent, lesson.pk, {"expires_when": "the SSO cutover"}).status_code == 200
    batches, version = ChangeBatch.objects.count(), memory.__class__.objects.get(pk=memory.pk).version
    response = put(agent, lesson.pk, {"expires_when": "the SSO cutover", "expires_on": None})
    assert response.status_code == 200 and response.json()["version"] == version
    assert ChangeBatch.objects.count() == batches


def test_an_expiry_reached_takes_the_lesson_out_of_the_context(agent, memory, persona, project):
    lesson = make_lesson(memory, "Deploys are frozen for the migration week")
    make_lesson(memory, "Deploy with make deploy")
    url = memory_url(persona, project, "context")
    with time_machine.travel(date(2026, 3, 6)):
        assert put(agent, lesson.pk, {"expires_on": "2026-03-09"}).status_code == 200
        assert "frozen" in agent.get(url).content.decode()
        lessons = {item["id"]: item for item in agent.get(url + "?format=json").json()["lessons"]}
        assert lessons[lesson.pk]["expires_on"] == "2026-03-09"
    with time_machine.travel(date(2026, 3, 9)):
        text = agent.get(url).content.decode()
        assert "frozen" not in text and "make deploy" in text


def test_a_core_lesson_is_refused_clearing_included(agent, memory, approver):
    core = make_lesson(memory, "Never log card numbers", tier="core", category="DECISION")
    response = put(agent, core.pk, {"expires_on": "2027-01-01"})
    assert response.status_code == 403
    assert "core lesson" in response.json()["detail"] and "person" in response.json()["detail"]
    services.lesson_set_expiry(lesson=core, expires_on=date(2027, 1, 1), actor=services.Actor.for_user(approver))
    changes = Change.objects.count()
    assert put(agent, core.pk, {}).status_code == 403
    core.refresh_from_db()
    assert core.expires_on == date(2027, 1, 1) and Change.objects.count() == changes


def test_a_retired_lesson_is_a_409(agent, memory):
    lesson = make_lesson(memory, "Old advice")
    services.lesson_delete(lesson=lesson, actor=services.Actor.system())
    response = put(agent, lesson.pk, {"expires_on": "2027-01-01"})
    assert response.status_code == 409 and "deleted" in response.json()["detail"]


def test_another_personas_lesson_and_unknown_ids(agent, other_persona, project):
    theirs = make_lesson(MemoryFactory(persona=other_persona, project=project), "Their lesson")
    assert put(agent, theirs.pk, {"expires_on": "2027-01-01"}).status_code == 403
    assert put(agent, 10**12, {"expires_on": "2027-01-01"}).status_code == 404
    assert put(agent, 0, {}).status_code == 422
    assert Lesson.objects.get(pk=theirs.pk).expires_on is None


@pytest.mark.parametrize(
    "body, field",
    [
        ({"expires_on": "01.03.2027"}, "expires_on"),
        ({"expires_on": "2027-02-29"}, "expires_on"),
        ({"expires_on": 20270301}, "expires_on"),
        ({"expires_on": "2027-03-01T00:00:00Z"}, "expires_on"),
        ({"expires_when": "a\nb"}, "expires_when"),
        ({"expires_when": "bad\x00byte"}, "expires_when"),
        ({"expires_when": "x" * 301}, "expires_when"),
    ],
)
def test_bad_input_names_the_field_and_changes_nothing(agent, memory, body, field):
    lesson = make_lesson(memory, "Use the old build image for now")
    changes = Change.objects.count()
    response = put(agent, lesson.pk, body)
    assert response.status_code == 422, response.content
    assert field in response.json()["fields"]
    lesson.refresh_from_db()
    assert (lesson.expires_on, lesson.expires_when, Change.objects.count()) == (None, "", changes)


def test_not_json_and_no_token(agent, client, memory):
    lesson = make_lesson(memory, "A lesson")
    response = agent.client.put(
        f"/api/v1/lessons/{lesson.pk}/expiry", "{", content_type="application/json", headers=agent.headers
    )
    assert response.status_code == 400
    assert client.put(f"/api/v1/lessons/{lesson.pk}/expiry", {}, content_type="application/json").status_code == 401


def test_query_count_does_not_grow_with_refs(agent, memory, django_assert_num_queries):
    one = make_lesson(memory, "One ref", refs="a.py")
    many = make_lesson(memory, "Many refs", refs="a.py, b.py, c.py#L1-L5, d/")
    assert put(agent, one.pk, {"expires_when": "the token is used once"}).status_code == 200
    # (The token's scope comes from the cache.) The lesson with its memory, the token's row, then the
    # write path in savepoints (a batch, the lesson locked, before and after snapshots with refs, the
    # update, the change, the memory, its version bumped and its lessons recounted), then the answer:
    # the lesson with its memory, its refs with their anchors. The same for one ref or four.
    with django_assert_num_queries(18):
        assert put(agent, one.pk, {"expires_on": "2027-01-01"}).status_code == 200
    with django_assert_num_queries(18):
        assert put(agent, many.pk, {"expires_on": "2027-01-01"}).status_code == 200


@pytest.mark.parametrize("body", [[None, None], "2027-01-01", 7, None])
def test_a_body_that_is_no_object_is_refused(agent, memory, body):
    lesson = make_lesson(memory, "Use the old build image for now")
    response = put(agent, lesson.pk, json.dumps(body))
    assert response.status_code == 422, response.content
    assert "JSON object" in str(response.json()["fields"])
    assert Change.objects.filter(lesson=lesson).count() == 1
