"""GET /api/v1/memory/{persona}/{project}/lessons?path=&category=&tier=&words="""

from datetime import date

import pytest
import time_machine

from memory.models import Lesson
from memory.services import Actor, lesson_delete
from tests.api.conftest import memory_url
from tests.factories import make_lesson


@pytest.fixture
def lessons(memory):
    return {
        "login": make_lesson(memory, "Login throttles by IP", refs="src/auth/login.py#L10-L20"),
        "tokens": make_lesson(
            memory, "Token rotation is daily", category="PATTERN", tier="core", refs="src/auth/tokens.py"
        ),
        "authz": make_lesson(memory, "authz is a sibling folder", refs="src/authz/rules.py"),
        "api": make_lesson(memory, "Views are thin", category="DECISION", refs="src/api/views.py"),
        "none": make_lesson(memory, "Standup moved to 10:00"),
    }


def ids(response):
    assert response.status_code == 200, response.content
    return [item["id"] for item in response.json()["items"]]


def test_folder_prefix_and_file(agent, persona, project, lessons):
    url = memory_url(persona, project, "lessons")
    assert ids(agent.get(url, {"path": "src/auth/"})) == [lessons["login"].pk, lessons["tokens"].pk]
    assert ids(agent.get(url, {"path": "src/auth/login.py"})) == [lessons["login"].pk]
    assert ids(agent.get(url, {"path": "src/auth"})) == [lessons["login"].pk, lessons["tokens"].pk]
    assert ids(agent.get(url)) == [lesson.pk for lesson in lessons.values()]


def test_words_must_all_appear_in_any_case(agent, persona, project, lessons):
    url = memory_url(persona, project, "lessons")
    assert ids(agent.get(url, {"words": "token DAILY"})) == [lessons["tokens"].pk]
    # Words rank the results (best match first): two lessons matching alike come in either order.
    assert sorted(ids(agent.get(url, {"words": "is", "path": "src/"}))) == [lessons["tokens"].pk, lessons["authz"].pk]
    assert ids(agent.get(url, {"words": "token weekly"})) == []
    response = agent.get(url, {"words": "x" * 201})
    assert response.status_code == 422 and "words" in response.json()["fields"]


def test_words_match_other_forms_and_rank_the_best_first(agent, persona, project, memory):
    url = memory_url(persona, project, "lessons")
    once = make_lesson(memory, "Retries of the refund job are logged")
    twice = make_lesson(memory, "Refund retries: a refund is retried at most three times")
    assert ids(agent.get(url, {"words": "refunds retrying"})) == [twice.pk, once.pk]
    assert ids(agent.get(url, {"words": "refund -logged"})) == [twice.pk]
    assert ids(agent.get(url, {"words": '"refund job"'})) == [once.pk]
    assert ids(agent.get(url, {"words": "-"})) == []


def test_category_and_tier_filters(agent, persona, project, lessons):
    url = memory_url(persona, project, "lessons")
    assert ids(agent.get(url, {"tier": "core"})) == [lessons["tokens"].pk]
    assert ids(agent.get(url, {"category": "DECISION"})) == [lessons["api"].pk]
    assert ids(agent.get(url, {"path": "src/", "tier": "working", "category": "OBSERVATION"})) == [
        lessons["login"].pk,
        lessons["authz"].pk,
    ]


def test_items_carry_refs_and_deleted_lessons_are_left_out(agent, persona, project, lessons):
    lesson_delete(lesson=lessons["authz"], actor=Actor.system("tests"))
    data = agent.get(memory_url(persona, project, "lessons"), {"path": "src/"}).json()
    assert lessons["authz"].pk not in [item["id"] for item in data["items"]]
    first = data["items"][0]
    # No checkout of the project: the ref is unanchored (not checked), with nothing proposed.
    assert first["refs"] == [
        {
            "path": "src/auth/login.py",
            "start_line": 10,
            "end_line": 20,
            "text": "src/auth/login.py#L10-L20",
            "status": "unanchored",
            "verified_commit": None,
            "proposed": None,
            "note": "",
            "permalink": None,
        }
    ]
    assert first["category"] == "OBSERVATION" and first["tier"] == "working" and first["vague"] is False


def test_pagination(agent, persona, project, lessons):
    url = memory_url(persona, project, "lessons")
    page = agent.get(url, {"limit": 2}).json()
    assert (page["count"], page["limit"], page["offset"], page["next_offset"]) == (5, 2, 0, 2)
    last = agent.get(url, {"limit": 2, "offset": 4}).json()
    assert last["next_offset"] is None and [i["id"] for i in last["items"]] == [lessons["none"].pk]


@pytest.mark.parametrize(
    "params, field",
    [
        ({"category": "GOSSIP"}, "category"),
        ({"tier": "attic"}, "tier"),
        ({"limit": 0}, "limit"),
        ({"limit": 201}, "limit"),
        ({"offset": -1}, "offset"),
        ({"limit": "ten"}, "limit"),
        ({"path": "../secrets/"}, "path"),
        ({"path": "  "}, "path"),
    ],
)
def test_bad_filters_name_the_field(agent, persona, project, memory, params, field):
    response = agent.get(memory_url(persona, project, "lessons"), params)
    assert response.status_code == 422
    assert field in response.json()["fields"]


def test_unknown_memory_is_an_empty_list(agent, persona, project):
    assert agent.get(memory_url(persona, project, "lessons")).json()["count"] == 0


def test_query_count_does_not_grow(agent, persona, project, memory, django_assert_num_queries):
    url = memory_url(persona, project, "lessons")
    agent.get(url)  # records the token's first use
    for i in range(3):
        make_lesson(memory, f"Lesson about src/auth/a{i}.py", refs=f"src/auth/a{i}.py")
    # memory, count, lessons, refs (the token's scope is cached)
    with django_assert_num_queries(4):
        assert agent.get(url, {"path": "src/auth/"}).json()["count"] == 3
    for i in range(30):
        make_lesson(memory, f"More about src/auth/b{i}.py", refs=[f"src/auth/b{i}.py", "src/auth/common.py"])
    with django_assert_num_queries(4):
        assert agent.get(url, {"path": "src/auth/"}).json()["count"] == 33


def test_expired_lessons_are_left_out_from_their_day_and_dated_ones_say_so(agent, persona, project, memory):
    dated = make_lesson(memory, "Deploys are frozen, see src/deploy.py", refs="src/deploy.py")
    make_lesson(memory, "Deploy with src/deploy.py", refs="src/deploy.py")
    Lesson.objects.filter(pk=dated.pk).update(expires_on=date(2026, 3, 9), expires_when="the migration week is over")
    url = memory_url(persona, project, "lessons")
    with time_machine.travel(date(2026, 3, 8)):
        items = {item["id"]: item for item in agent.get(url, {"path": "src/deploy.py"}).json()["items"]}
        assert (items[dated.pk]["expires_on"], items[dated.pk]["expires_when"]) == (
            "2026-03-09",
            "the migration week is over",
        )
        assert agent.get(url, {"words": "frozen"}).json()["count"] == 1
    with time_machine.travel(date(2026, 3, 9)):
        page = agent.get(url, {"path": "src/deploy.py"}).json()
        assert dated.pk not in [item["id"] for item in page["items"]] and page["count"] == 1
        assert agent.get(url, {"words": "frozen"}).json()["count"] == 0
        # Recall still shows it by id, with its expiry.
        assert agent.get(f"/api/v1/lessons/{dated.pk}").json()["expires_on"] == "2026-03-09"
