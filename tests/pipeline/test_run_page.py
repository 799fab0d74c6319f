"""A finished run's page says what the run created, with links; provenance shows the cited transcript."""

import re

import pytest
from django.urls import reverse

from memory.models import Lesson, PipelineRun, PromotionCandidate
from tests.pipeline.helpers import make_interaction, run_pipeline

pytestmark = pytest.mark.django_db

TRANSCRIPT = [
    {
        "id": "m1",
        "role": "user",
        "at": "2026-03-02 09:15",
        "text": "The retry loop in src/queue/worker.py#L40-L52 swallows TimeoutError, please fix it.",
    },
    {
        "id": "m2",
        "role": "assistant",
        "at": "2026-03-02 09:17",
        "text": "Fixed the retry loop so TimeoutError reaches the caller; see tests/test_worker.py#L12.",
    },
    {"id": "m3", "role": "user", "at": "2026-03-02 09:20", "text": "Never retry a payment capture automatically."},
]


def test_observations_lose_speaker_prefixes_and_get_the_refs_the_transcript_names(memory, scripted_engine):
    interaction = make_interaction(memory, TRANSCRIPT)
    scripted_engine(
        turns=[
            [
                (
                    "record_observations",
                    {
                        "observations": [
                            {
                                "timestamp": "2026-03-02 09:15",
                                "content": "User: the retry loop swallows TimeoutError.",
                                "relevance": "high",
                                "sourceEntryIds": ["m1"],
                            },
                            {
                                "timestamp": "2026-03-02 09:17",
                                "content": "Assistant: fixed it, TimeoutError now reaches the caller.",
                                "relevance": "medium",
                                "sourceEntryIds": ["m2", "m1"],
                            },
                        ]
                    },
                )
            ],
            "Covered.",
            "Done.",
            "Done.",
        ]
    )
    run = run_pipeline(memory, interaction)
    assert run.status == "completed", run.error
    first = Lesson.objects.get(memory=memory, text="The retry loop swallows TimeoutError.")
    assert [r.as_text() for r in first.refs.all()] == ["src/queue/worker.py#L40-L52"]
    second = Lesson.objects.get(memory=memory, text="Fixed it, TimeoutError now reaches the caller.")
    assert [r.as_text() for r in second.refs.all()] == ["src/queue/worker.py#L40-L52", "tests/test_worker.py#L12"]


def test_finished_run_lists_what_it_created_and_says_the_pruner_was_skipped(client_for, viewer, memory):
    interaction = make_interaction(
        memory,
        [
            *TRANSCRIPT,
            {
                "id": "m4",
                "role": "user",
                "at": "2026-03-02 09:30",
                "text": "The retry loop in the queue worker must surface TimeoutError to callers.",
            },
        ],
    )
    run = run_pipeline(memory, interaction)  # offline engine; working memory stays far under its budget
    run.refresh_from_db()
    assert run.status == "completed", run.error
    observations = list(Lesson.objects.filter(memory=memory, tier="working").order_by("id"))
    assert observations and not any(re.match(r"(User|Assistant):", lesson.text) for lesson in observations)
    candidates = list(PromotionCandidate.objects.filter(memory=memory))
    assert candidates

    html = client_for(viewer).get(reverse("pipeline:run", args=[run.pk])).content.decode()
    for lesson in observations:
        assert f'href="/lessons/{lesson.pk}/history/"' in html
    for candidate in candidates:
        assert f'href="/promotions/{candidate.pk}/"' in html
    assert f'Observations recorded <span class="count">{len(observations)}</span>' in html
    assert 'data-phase="pruner" data-state="skipped"' in html and "skipped</span>" in html
    assert "Pruner skipped: working memory was within its token budget" in html
    assert "src/queue/worker.py#L40-L52" in html


def test_a_pruner_that_ran_is_done_not_skipped(client_for, viewer, memory):
    run = PipelineRun.objects.create(
        memory=memory,
        status="completed",
        phase="pruner",
        pass_no=1,
        max_passes=2,
        completed_phases=["observer", "reflector", "pruner"],
    )
    html = client_for(viewer).get(reverse("pipeline:run", args=[run.pk])).content.decode()
    assert 'data-phase="pruner" data-state="done"' in html and "Pruner skipped" not in html


def test_provenance_shows_the_cited_entries_and_links_the_interaction(client_for, viewer, memory):
    interaction = make_interaction(memory, TRANSCRIPT)
    run_pipeline(memory, interaction)
    lesson = Lesson.objects.filter(memory=memory, source_entry_ids__isnull=False).order_by("id").first()
    assert lesson.source_entry_ids == ["m1"]
    client = client_for(viewer)
    html = client.get(reverse("lesson_history", args=[lesson.pk])).content.decode()
    assert f'href="/interactions/{interaction.pk}/"' in html
    assert f'href="/interactions/{interaction.pk}/#entry-m1">m1</a> <strong>User</strong>' in html
    assert "swallows TimeoutError, please fix it." in html  # the entry's own words

    page = client.get(reverse("interaction_detail", args=[interaction.pk])).content.decode()
    assert 'id="entry-m1"' in page and 'id="entry-m3"' in page
    assert "Never retry a payment capture automatically." in page
    assert f'cited by <a href="/lessons/{lesson.pk}/history/">#{lesson.pk}</a>' in page
