"""The memory page's ref decisions: check now, accept a move (one or all), drop a ref, retire a lesson."""

import pytest
from django.urls import reverse

from memory.models import Change, ChangeBatch, LessonRef, LessonStatus, RefCheck

pytestmark = pytest.mark.django_db


def ref_of(lesson):
    return LessonRef.objects.get(lesson=lesson)


def test_the_memory_page_marks_moved_and_stale_refs(client_for, viewer, checked_memory, drifted):
    page = client_for(viewer).get(checked_memory.get_absolute_url()).content.decode()

    assert "2 refs need review" in page
    assert "moved → src/auth/middleware.py#L12-L14" in page
    assert "stale: changed" in page
    assert 'data-ref-status="valid"' in page
    assert "Accept src/auth/middleware.py#L12-L14" not in page  # a viewer only reads


def test_refs_need_review_filter(client_for, viewer, checked_memory, drifted):
    client = client_for(viewer)
    page = client.get(checked_memory.get_absolute_url(), {"refs": "review"}).content.decode()

    assert "Auth step ten" in page and "Invoice step four" in page
    assert "Invoice step thirty" not in page
    assert "2 lessons match these filters" in page


def test_a_ref_links_to_the_commit_it_was_verified_at(client_for, viewer, checked_memory, drifted, repo):
    anchor = ref_of(drifted["changed"]).anchor
    page = client_for(viewer).get(checked_memory.get_absolute_url()).content.decode()

    assert f"https://github.com/example/app/blob/{anchor.commit}/src/billing/invoice.py#L4" in page
    assert anchor.commit != repo.head()


def test_accept_a_moved_ref_over_htmx(client_for, curator, drifted):
    ref = ref_of(drifted["moved"])
    response = client_for(curator).post(reverse("ref_accept", args=[ref.pk]), HTTP_HX_REQUEST="true")

    assert response.status_code == 200
    assert "src/auth/middleware.py#L12-L14" in response.content.decode()
    assert [r.as_text() for r in drifted["moved"].refs.all()] == ["src/auth/middleware.py#L12-L14"]
    change = Change.objects.filter(lesson=drifted["moved"]).latest("id")
    assert change.batch.actor_user == curator and change.action == Change.Action.UPDATE


def test_accept_without_js_redirects_back_with_a_message(client_for, curator, checked_memory, drifted):
    ref = ref_of(drifted["moved"])
    response = client_for(curator).post(reverse("ref_accept", args=[ref.pk]), follow=True)

    assert response.redirect_chain[-1][0].startswith(checked_memory.get_absolute_url())
    assert "Moved ref accepted" in response.content.decode()


def test_accepting_a_ref_that_did_not_move_changes_nothing(client_for, curator, drifted):
    ref = ref_of(drifted["changed"])
    before = Change.objects.count()
    response = client_for(curator).post(reverse("ref_accept", args=[ref.pk]), HTTP_HX_REQUEST="true")

    assert "no proposed move to accept" in response.content.decode()
    assert Change.objects.count() == before


def test_drop_a_stale_ref(client_for, curator, drifted):
    ref = ref_of(drifted["changed"])
    client_for(curator).post(reverse("ref_drop", args=[ref.pk]), HTTP_HX_REQUEST="true")

    assert list(drifted["changed"].refs.all()) == []
    change = Change.objects.filter(lesson=drifted["changed"]).latest("id")
    assert change.before["refs"] == ["src/billing/invoice.py#L4"] and change.after["refs"] == []
    assert "Dropped code reference src/billing/invoice.py#L4 (changed)" in change.batch.reason


def test_retire_a_lesson_whose_ref_is_stale(client_for, curator, drifted):
    ref = ref_of(drifted["changed"])
    client_for(curator).post(reverse("ref_retire", args=[ref.pk]), HTTP_HX_REQUEST="true")

    drifted["changed"].refresh_from_db()
    assert drifted["changed"].status == LessonStatus.DELETED


def test_accept_all_moved_is_one_batch(client_for, curator, checked_memory, drifted):
    response = client_for(curator).post(reverse("refs_accept_moved", args=[checked_memory.pk]), follow=True)

    batch = ChangeBatch.objects.filter(memory=checked_memory).latest("id")
    assert batch.label == "Accepted 1 moved code reference"
    assert "Accepted 1 moved code reference, as one change you can revert from history." in response.content.decode()


def test_check_now_reports_what_it_found(client_for, curator, checked_memory, drifted, repo):
    repo.replace_line("src/billing/invoice.py", 30, "rewritten = True")
    repo.commit("one more")

    response = client_for(curator).post(reverse("refs_check", args=[checked_memory.pk]))

    assert response.status_code == 302
    assert RefCheck.objects.filter(project=checked_memory.project).count() == 2
    page = client_for(curator).get(response.url).content.decode()
    assert f"Checked 3 refs at {repo.head()[:10]}: 3 need review." in page


@pytest.mark.parametrize("name", ["ref_accept", "ref_drop", "ref_retire"])
def test_viewers_cannot_decide(client_for, viewer, drifted, name):
    ref = ref_of(drifted["moved"])
    assert client_for(viewer).post(reverse(name, args=[ref.pk])).status_code == 403
    assert [r.as_text() for r in drifted["moved"].refs.all()] == ["src/auth/middleware.py#L10-L12"]


def test_viewers_cannot_start_a_check(client_for, viewer, checked_memory):
    assert client_for(viewer).post(reverse("refs_check", args=[checked_memory.pk])).status_code == 403
    assert not RefCheck.objects.exists()
