"""Revert one change of a promotion, then the whole batch, in a real browser: no supporting lesson is lost."""

from memory import services
from memory.models import Change, Lesson, LessonStatus, PromotionCandidate
from tests.memory.test_revert_dependencies import promoted


def test_revert_one_change_then_the_whole_batch(page, login, make_user, screenshot, persona):
    lead = make_user("lead", role="approver")
    batch, before = promoted(persona, services.Actor.for_user(lead))
    memory = batch.memory
    supporting = list(Lesson.objects.filter(memory=memory, tier="working").order_by("id"))
    login("lead")

    page.goto(f"/memories/{memory.pk}/history/")
    card = page.locator(f"#batch-{batch.pk}")
    first = batch.changes.filter(action=Change.Action.PROMOTE).order_by("id").first()
    row = card.locator("li.change", has=page.locator(f'a[href="/lessons/{first.lesson_id}/history/"]'))
    row.locator("button", has_text="Revert this change").click()
    page.locator(".messages, .alert", has_text=f"Change #{first.pk} reverted").first.wait_for()
    screenshot("one-change-reverted")
    assert Lesson.objects.get(pk=first.lesson_id).status == LessonStatus.ACTIVE

    card = page.locator(f"#batch-{batch.pk}")
    card.locator(".batch-foot button", has_text="Revert the whole batch").click()
    page.locator(f"#batch-{batch.pk} .badge", has_text="Reverted by batch").wait_for()
    screenshot("whole-batch-reverted")

    assert all(Lesson.objects.get(pk=lesson.pk).status == LessonStatus.ACTIVE for lesson in supporting)
    assert (
        set(Lesson.objects.filter(memory=memory, status=LessonStatus.ACTIVE).values_list("text", flat=True)) >= before
    )
    assert not Lesson.objects.filter(memory=memory, tier="core", status=LessonStatus.ACTIVE).exists()
    assert PromotionCandidate.objects.get(batch=batch).status == PromotionCandidate.Status.REVERTED
    page.goto(f"/memories/{memory.pk}/")
    working = page.locator("section.tier-working").inner_text()
    assert all(lesson.text in working for lesson in supporting)
