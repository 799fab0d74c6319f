"""An endpoint of one team hears its own team's events only, for every event type."""

from datetime import timedelta

import pytest
from django.utils import timezone

from memory import services
from memory.models import PromotionCandidate
from memory.promotions.services import promotion_reject
from memory.webhooks.models import EVENT_TYPES
from memory.webhooks.services import webhook_endpoint_create, webhooks_record_overdue
from personas.models import Project, Team
from tests.sync.conftest import nw_append, section
from tests.webhooks.test_delivery import _candidate

pytestmark = pytest.mark.django_db


@pytest.fixture
def two_teams(receiver, team_memory):
    memories = {label: team_memory(label) for label in ("alpha", "beta")}
    for label, memory in memories.items():
        endpoint = webhook_endpoint_create(
            team=memory.project.team, url=receiver.url(f"/{label}"), event_types=list(EVENT_TYPES)
        )
        receiver.listen(f"/{label}", endpoint.secret)
    site_wide = webhook_endpoint_create(team=None, url=receiver.url("/all"), event_types=list(EVENT_TYPES))
    receiver.listen("/all", site_wide.secret)
    return memories


def _teams_heard(receiver, event_type):
    return {
        path: sorted(
            {
                body["data"]["team"]["slug"]
                for p, body, _ in receiver.received
                if p == path and body["type"] == event_type
            }
        )
        for path in ("/alpha", "/beta", "/all")
    }


def test_waiting(two_teams, receiver, deliver):
    _candidate(two_teams["beta"])
    deliver()
    assert _teams_heard(receiver, "review.waiting") == {"/alpha": [], "/beta": ["beta"], "/all": ["beta"]}


def test_decided(two_teams, receiver, deliver, approver):
    candidate = _candidate(two_teams["alpha"])
    promotion_reject(candidate=candidate, actor=services.Actor.for_user(approver), reason="Not a lesson")
    deliver()
    assert _teams_heard(receiver, "review.decided") == {"/alpha": ["alpha"], "/beta": [], "/all": ["alpha"]}


def test_overdue(two_teams, receiver, deliver, settings):
    settings.REVIEW_OVERDUE_DAYS = 7
    candidate = _candidate(two_teams["beta"])
    PromotionCandidate.objects.filter(pk=candidate.pk).update(created_at=timezone.now() - timedelta(days=8))
    _candidate(two_teams["alpha"])  # fresh: not overdue
    assert webhooks_record_overdue() == 1
    deliver()
    assert _teams_heard(receiver, "review.overdue") == {"/alpha": [], "/beta": ["beta"], "/all": ["beta"]}
    (body,) = [b for p, b, _ in receiver.received if p == "/beta" and b["type"] == "review.overdue"]
    assert body["data"]["count"] == 1 and body["data"]["items"][0]["id"] == candidate.pk
    assert candidate.text not in str(body)


def test_sync_failed_once_per_failure(two_teams, receiver, deliver, tmp_path):
    from memory.sync.engine import sync_pass

    root = tmp_path / "agents"
    working = root / "Dev" / "memories" / "api" / "working.md"
    nw_append(working, section("2026-03-01", "[OBSERVATION] The retry loop uses a fixed delay"))
    sync_pass(root)
    Project.objects.filter(slug="api").update(team=Team.objects.get(slug="alpha"))
    with open(working, "ab") as handle:
        handle.write(b"## 2026-03-02 [OBSERVATION]\n- caf\xe9 latin-1 bytes\n\n")
    assert sync_pass(root).failed
    assert sync_pass(root).failed  # still failing: no second event
    deliver()
    assert _teams_heard(receiver, "sync.failed") == {"/alpha": ["alpha"], "/beta": [], "/all": ["alpha"]}
    (body,) = [b for p, b, _ in receiver.received if p == "/alpha"]
    assert "not UTF-8" in body["data"]["error"] and body["data"]["folder"] == "Dev/memories/api"


def test_a_file_conflict_waits_and_is_settled_as_events(receiver, deliver, conflict_in_team):
    from memory.sync.services import sync_conflict_resolve

    conflict, user = conflict_in_team
    sync_conflict_resolve(conflict=conflict, choice="dashboard", actor=services.Actor.for_user(user))
    deliver()
    kinds = [(b["type"], b["data"]["items"][0]["kind"]) for p, b, _ in receiver.received if p == "/gamma"]
    assert kinds == [("review.waiting", "file conflict"), ("review.decided", "file conflict")]


@pytest.fixture
def conflict_in_team(receiver, tmp_path, admin_user):
    from memory.models import Lesson
    from memory.sync.engine import sync_pass
    from memory.sync.models import SyncConflict
    from tests.sync.conftest import nw_rewrite

    root = tmp_path / "agents"
    working = root / "Dev" / "memories" / "api" / "working.md"
    nw_append(working, section("2026-03-01", "[OBSERVATION] The retry loop uses a fixed delay"))
    sync_pass(root)
    team = Team.objects.create(name="Gamma", slug="gamma")
    Project.objects.filter(slug="api").update(team=team)
    endpoint = webhook_endpoint_create(team=team, url=receiver.url("/gamma"), event_types=list(EVENT_TYPES))
    receiver.listen("/gamma", endpoint.secret)
    lesson = Lesson.objects.get(text="The retry loop uses a fixed delay")
    services.lesson_update(lesson=lesson, actor=services.Actor.for_user(admin_user), text="The retry loop waits 2 s")
    nw_rewrite(working, working.read_text().replace("uses a fixed delay", "has no backoff"))
    sync_pass(root)
    return SyncConflict.objects.get(), admin_user


def test_refs_that_begin_to_need_a_look_wait_as_one_event_per_memory(receiver, deliver, drifted):
    from memory.models import WebhookEvent

    (event,) = WebhookEvent.objects.filter(type="review.waiting", data__items__0__kind="refs to review")
    memory_id = next(iter(drifted.values())).memory_id
    assert event.memory_id == memory_id and event.data["count"] == 2  # one moved, one changed
    assert event.data["items"][0]["url"].endswith("?refs=review")


def test_conflicts_wait_and_are_decided_as_events_of_their_team(two_teams, receiver, deliver):
    from datetime import date

    from memory.conflicts.services import conflict_keep_newer, conflicts_detect
    from memory.models import LessonConflict
    from tests.factories import make_lesson

    memory = two_teams["beta"]
    make_lesson(memory, "Install frontend dependencies with npm install in web/.", day=date(2026, 1, 10))
    newer = make_lesson(memory, "Install frontend dependencies with pnpm install in web/.", day=date(2026, 3, 2))
    assert conflicts_detect(memory=memory, lesson_ids=[newer.pk]) == (1, 0)
    conflict_keep_newer(conflict=LessonConflict.objects.get(), actor=services.Actor.system("lead"))
    deliver()
    kinds = [(b["type"], b["data"]["items"][0]["kind"]) for p, b, _ in receiver.received if p == "/beta"]
    assert kinds == [("review.waiting", "conflict"), ("review.decided", "conflict")]
    assert not [b for p, b, _ in receiver.received if p == "/alpha"]
    assert "pnpm" not in str(receiver.received)  # lesson text only where an endpoint asks for it
