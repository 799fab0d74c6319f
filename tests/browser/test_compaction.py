"""An approver reviews a compaction in a real browser: reads the diff, edits a line, applies, then reverts
(from the proposal's button, or from the memory's history page the review links to)."""

from datetime import date, timedelta

from memory import services
from memory.compaction.services import compaction_propose
from memory.models import CompactionProposal, Lesson
from tests.factories import MemoryFactory, make_lesson


def _memory_with_duplicates():
    memory = MemoryFactory(persona__name="Priya", persona__role="QA Engineer", project__name="Night Watch CLI")
    day = date(2026, 3, 1)
    make_lesson(
        memory,
        "Flaky test: the scheduler spec sleeps 100ms instead of waiting on the job",
        refs="tests/scheduler.spec.ts#L40-L52",
        day=day,
    )
    make_lesson(
        memory,
        "flaky test: the scheduler spec sleeps 100ms instead of waiting on the job.",
        refs="tests/scheduler.spec.ts#L60",
        day=day + timedelta(days=2),
    )
    make_lesson(
        memory,
        "Coverage gap: no test drives the retry path of the uploader",
        category="TODO",
        refs="src/upload/retry.ts#L10-L31",
        relevance="high",
        day=day,
    )
    make_lesson(
        memory,
        "Consider better error handling",
        category="HYPOTHESIS",
        relevance="low",
        vague=True,
        day=day - timedelta(days=30),
    )
    make_lesson(
        memory,
        "Snapshot tests must run with TZ=UTC or dates shift",
        category="DECISION",
        protected=True,
        refs="jest.config.js#L4",
        day=day,
    )
    for i in range(5):
        make_lesson(
            memory,
            f"Old low-value note {i} about src/legacy/mod_{i}.py",
            relevance="low",
            day=day - timedelta(days=60 - i),
        )
    memory.compaction_target_lines = 5
    memory.save()
    return memory


def test_review_edit_apply_and_revert(page, login, make_user, screenshot):
    make_user("lead", role="approver")
    memory = _memory_with_duplicates()
    proposal = compaction_propose(memory=memory, actor=services.Actor.job("compaction check"))
    assert proposal.status == "pending", proposal.validation_errors
    before = {(lesson.pk, lesson.text, lesson.status) for lesson in Lesson.objects.filter(memory=memory)}

    login("lead")
    page.goto("/compactions/")
    page.get_by_role("link", name=f"#{proposal.pk}").click()
    page.wait_for_url(f"**/compactions/{proposal.pk}/")
    assert page.locator("#proposal-status").inner_text() == "Pending review"
    diff = page.locator("pre.diff")
    assert "working.md (proposed)" in diff.inner_text()
    assert page.locator("pre.diff .diff-del").count() > 0
    screenshot("review")

    # Edit the merged line in place (htmx swaps the row for a form, then reloads the page).
    merged_row = page.locator("tr.kind-merged").first
    position = merged_row.locator("td").first.inner_text()
    merged_row.get_by_role("link", name="Edit").click()
    form = page.locator("tr.editing form")
    form.locator("input[name=text]").fill("Scheduler spec is flaky: it sleeps 100ms instead of awaiting the job")
    screenshot("editing")
    form.get_by_role("button", name="Save line").click()
    page.wait_for_selector("text=updated; the proposal was validated again")
    row = page.locator(f"#line-{position}")
    assert "awaiting the job" in row.inner_text() and "edited" in row.inner_text()
    assert any("awaiting the job" in t for t in page.locator("pre.diff .diff-add").all_inner_texts())

    page.get_by_role("button", name="Approve and apply").click()
    page.wait_for_selector("text=Compaction applied")
    assert page.locator("#proposal-status").inner_text() == "Applied"
    assert Lesson.objects.filter(memory=memory, status="active", text__contains="awaiting the job").exists()
    screenshot("applied")

    page.get_by_role("button", name="Revert this compaction").click()
    page.wait_for_selector("text=Compaction reverted")
    assert page.locator("#proposal-status").inner_text() == "Reverted"
    assert CompactionProposal.objects.get(pk=proposal.pk).status == "reverted"
    restored = {
        (lesson.pk, lesson.text, lesson.status)
        for lesson in Lesson.objects.filter(memory=memory, pk__in=[p for p, _, _ in before])
    }
    assert restored == before
    screenshot("reverted")


def test_invalid_edit_shows_the_error_in_place(page, login, make_user):
    make_user("lead", role="approver")
    memory = _memory_with_duplicates()
    proposal = compaction_propose(memory=memory, actor=services.Actor.job("compaction check"))
    login("lead")
    page.goto(f"/compactions/{proposal.pk}/")
    row = page.locator("tr.kind-merged").first
    row.get_by_role("link", name="Edit").click()
    page.locator("tr.editing input[name=refs]").fill("")
    page.locator("tr.editing").get_by_role("button", name="Save line").click()
    page.wait_for_selector("tr.editing .errors")
    assert "is in no proposed line" in page.locator("tr.editing .errors").inner_text()
    assert CompactionProposal.objects.get(pk=proposal.pk).lines.filter(edited=True).count() == 0


def test_apply_then_revert_from_the_memory_history(page, login, make_user, screenshot):
    make_user("lead", role="approver")
    memory = _memory_with_duplicates()
    proposal = compaction_propose(memory=memory, actor=services.Actor.job("compaction check"))
    before = {(lesson.pk, lesson.text, lesson.status) for lesson in Lesson.objects.filter(memory=memory)}

    login("lead")
    page.goto(f"/compactions/{proposal.pk}/")
    page.get_by_role("button", name="Approve and apply").click()
    page.wait_for_selector("text=Compaction applied")
    batch_id = CompactionProposal.objects.get(pk=proposal.pk).apply_batch_id

    # The applied batch links to the memory's history, where the same batch can be reverted.
    page.locator("#history-link").click()
    page.wait_for_url(f"**{memory.history_url()}#batch-{batch_id}")
    batch = page.locator(f"#batch-{batch_id}")
    assert "Compaction proposal" in batch.inner_text()
    screenshot("history")
    batch.locator(".batch-foot input[name=reason]").fill("Merged too much")
    batch.locator(".batch-foot").get_by_role("button", name="Revert the whole batch").click()
    # The history page reloads with the confirmation, the batch marked as reverted.
    page.locator(".messages .msg-success", has_text="reverted").wait_for()
    assert "Reverted by batch" in page.locator(f"#batch-{batch_id}").inner_text()
    screenshot("history-reverted")

    assert CompactionProposal.objects.get(pk=proposal.pk).status == "reverted"
    restored = {
        (lesson.pk, lesson.text, lesson.status)
        for lesson in Lesson.objects.filter(memory=memory, pk__in=[p for p, _, _ in before])
    }
    assert restored == before
    page.goto(f"/compactions/{proposal.pk}/")
    assert page.locator("#proposal-status").inner_text() == "Reverted"
    assert page.get_by_role("button", name="Revert this compaction").count() == 0
    assert page.locator("#history-link").count() == 1


def test_lessons_appended_through_the_api_survive_apply_and_revert(page, login, make_user, screenshot):
    from memory.models import ChangeBatch
    from memory.tokens import agent_token_create

    make_user("lead", role="approver")
    memory = _memory_with_duplicates()
    proposal = compaction_propose(memory=memory, actor=services.Actor.job("compaction check"))
    assert proposal.status == "pending", proposal.validation_errors
    covered_before = {
        (lesson.pk, lesson.text, lesson.status) for lesson in Lesson.objects.filter(pk__in=proposal.input_lesson_ids)
    }

    # Two agents' lessons arrive over HTTP while the proposal waits for review.
    _, raw = agent_token_create(persona=memory.persona)
    url = f"/api/v1/memory/{memory.persona.name}/{memory.project.slug}/lessons"
    texts = ["Upload retries back off 1s, 2s, 4s before failing", "The scheduler spec passes once it awaits the job"]
    response = page.request.post(
        url,
        headers={"Authorization": f"Bearer {raw}"},
        data={
            "lessons": [
                {"tool": "log_learning", "text": texts[0], "refs": ["src/upload/retry.ts#L40-L48"]},
                {"tool": "log_error", "text": texts[1], "error": "Timeout after 100ms"},
            ]
        },
    )
    assert response.status == 201, response.text()
    appended = list(Lesson.objects.filter(memory=memory).exclude(pk__in=proposal.input_lesson_ids).order_by("id"))
    assert appended[0].text == texts[0] and len(appended) == 2

    def state(lessons):
        return [
            (
                lesson.pk,
                lesson.text,
                lesson.category,
                lesson.status,
                lesson.lesson_date,
                [r.as_text() for r in lesson.refs.all()],
            )
            for lesson in Lesson.objects.filter(pk__in=[x.pk for x in lessons]).order_by("id")
        ]

    appended_state = state(appended)
    assert {s[3] for s in appended_state} == {"active"}

    login("lead")
    page.goto(f"/compactions/{proposal.pk}/")
    block = page.locator("#appended")
    assert "2 lessons appended since this proposal; they are kept as they are" in block.inner_text()
    assert texts[0] in block.inner_text() and page.locator("#stale-warning").count() == 0
    screenshot("appended")

    page.get_by_role("button", name="Approve and apply").click()
    page.wait_for_selector("text=Compaction applied")
    assert page.locator("#proposal-status").inner_text() == "Applied"
    assert state(appended) == appended_state
    screenshot("applied")

    page.locator("#history-link").click()
    batch_id = CompactionProposal.objects.get(pk=proposal.pk).apply_batch_id
    page.wait_for_url(f"**{memory.history_url()}#batch-{batch_id}")
    compaction_batches = page.locator("[id^=batch-]", has_text="Compaction proposal")
    assert compaction_batches.count() == 1
    assert ChangeBatch.objects.filter(memory=memory, kind="compaction").count() == 1

    page.goto(f"/compactions/{proposal.pk}/")
    page.get_by_role("button", name="Revert this compaction").click()
    page.wait_for_selector("text=Compaction reverted")
    assert page.locator("#proposal-status").inner_text() == "Reverted"
    restored = {
        (lesson.pk, lesson.text, lesson.status) for lesson in Lesson.objects.filter(pk__in=proposal.input_lesson_ids)
    }
    assert restored == covered_before
    assert state(appended) == appended_state
    screenshot("reverted")
