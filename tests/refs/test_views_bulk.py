"""POST /refs/memories/<id>/decide/: drop the selected refs, or retire their lessons, in one go."""

import pytest
from django.urls import reverse

from memory import services
from memory.models import Change, Lesson, LessonRef, LessonStatus
from memory.refs.services import refs_bulk_decide
from tests.refs.test_views import ref_of

pytestmark = pytest.mark.django_db


def _url(memory):
    return reverse("refs_bulk", args=[memory.pk])


def test_the_page_offers_a_tick_for_each_ref_that_needs_review(client_for, curator, checked_memory, drifted):
    page = client_for(curator).get(checked_memory.get_absolute_url()).content.decode()
    assert page.count('form="refs-bulk-form"') == 2 and 'id="refs-bulk-form"' in page
    assert f'value="{ref_of(drifted["valid"]).pk}" form="refs-bulk-form"' not in page


def test_drop_the_selected_refs_each_as_its_own_change(client_for, curator, checked_memory, drifted):
    refs = [ref_of(drifted["moved"]), ref_of(drifted["changed"])]
    response = client_for(curator).post(
        _url(checked_memory), {"ref": [r.pk for r in refs], "action": "drop"}, follow=True
    )
    assert "2 of 2 refs dropped" in response.content.decode()
    assert not LessonRef.objects.filter(pk__in=[r.pk for r in refs]).exists()
    batches = {Change.objects.filter(lesson=drifted[k]).latest("id").batch_id for k in ("moved", "changed")}
    assert len(batches) == 2  # each lesson reverts alone
    assert LessonRef.objects.filter(lesson=drifted["valid"]).exists()


def test_retire_the_lessons_of_the_selected_refs(client_for, curator, checked_memory, drifted):
    client_for(curator).post(_url(checked_memory), {"ref": [ref_of(drifted["changed"]).pk], "action": "retire"})
    assert Lesson.objects.get(pk=drifted["changed"].pk).status == LessonStatus.DELETED
    assert Lesson.objects.get(pk=drifted["moved"].pk).status == LessonStatus.ACTIVE


def test_a_lesson_edited_meanwhile_is_left_alone_and_named(curator, checked_memory, drifted):
    moved, changed = ref_of(drifted["moved"]), ref_of(drifted["changed"])
    actor = services.Actor.for_user(curator)
    services.lesson_update(lesson=drifted["moved"], actor=actor, refs="src/auth/middleware.py#L12-L14")
    services.lesson_delete(lesson=drifted["changed"], actor=actor)
    outcome = refs_bulk_decide(memory=checked_memory, ref_ids=[moved.pk, changed.pk], action="drop", actor=actor)
    assert outcome["done"] == []
    assert [item["id"] for item in outcome["refused"]] == [moved.pk, changed.pk]
    assert "no longer there" in outcome["refused"][0]["message"]
    assert "deleted already" in outcome["refused"][1]["message"]


@pytest.mark.parametrize(
    "data, message",
    [
        ({"action": "burn"}, "Choose to drop the refs or to retire their lessons."),
        ({"action": "drop", "ref": []}, "Select at least one ref."),
        ({"action": "drop", "ref": ["1", "x"]}, "not a ref number"),
    ],
)
def test_a_bad_request_says_why_and_changes_nothing(client_for, curator, checked_memory, drifted, data, message):
    data = {"ref": [ref_of(drifted["moved"]).pk], **data}
    page = client_for(curator).post(_url(checked_memory), data, follow=True).content.decode()
    assert "Nothing was changed" in page and message in page
    assert LessonRef.objects.count() == 3


def test_viewer_cannot(client_for, viewer, checked_memory, drifted):
    response = client_for(viewer).post(_url(checked_memory), {"ref": [ref_of(drifted["moved"]).pk], "action": "drop"})
    assert response.status_code == 403
    assert LessonRef.objects.count() == 3


def test_a_selection_over_the_limit_changes_nothing(client_for, curator, checked_memory, drifted):
    from memory.web import BULK_LIMIT

    refs = [ref_of(drifted["moved"]).pk, ref_of(drifted["changed"]).pk]
    data = {"ref": [*refs, *(900_000 + i for i in range(BULK_LIMIT + 1 - 2))], "action": "drop"}
    page = client_for(curator).post(_url(checked_memory), data, follow=True).content.decode()
    assert f"Nothing was changed: Decide at most {BULK_LIMIT} refs at once" in page
    assert LessonRef.objects.filter(pk__in=refs).count() == 2
