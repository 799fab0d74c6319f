"""Which lessons a conflict pass compares: the neighbours of a batch read through the search index,
common words, and the rarest shared words first."""

from datetime import date
from types import SimpleNamespace

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from memory.bench.conflicts import generate, seed
from memory.conflicts import detection
from memory.conflicts.neighbours import lessons_holding
from memory.conflicts.services import conflicts_detect
from memory.models import LessonConflict
from tests.factories import make_lesson

pytestmark = pytest.mark.django_db


def _lesson(i, text, day=date(2026, 1, 1)):
    return SimpleNamespace(id=i, text=text, lesson_date=day, tier="working")


def _filler(memory, n, text="Checkout payment webhook retries deploy staging note {i}."):
    for i in range(n):
        make_lesson(memory, text.format(i=i), day=date(2026, 1, 1))


def test_a_pair_sharing_one_rare_word_and_common_words_is_found(memory, monkeypatch):
    """ "checkout", "payment" and "webhook" are in more lessons than a word is looked through; the pair
    meets through "zorblat" and its common words still count as shared (MIN_SHARED, overlap)."""
    monkeypatch.setattr(detection, "MAX_POSTINGS", 5)
    _filler(memory, 8)
    older = make_lesson(memory, "Checkout payment webhook zorblat builds with npm.", day=date(2026, 1, 2))
    newer = make_lesson(memory, "Checkout payment webhook zorblat now builds with pnpm.", day=date(2026, 3, 1))
    assert conflicts_detect(memory=memory, lesson_ids=[newer.pk]) == (1, 0)
    conflict = LessonConflict.objects.get()
    assert (conflict.older, conflict.newer, conflict.relation) == (older, newer, "supersedes")


def test_the_index_reads_at_most_one_more_lesson_than_a_word_may_hold(memory, other_persona, project, monkeypatch):
    from tests.factories import MemoryFactory

    monkeypatch.setattr(detection, "MAX_POSTINGS", 5)
    _filler(memory, 8)
    make_lesson(memory, "Rotate the signing keys every 30 days.")
    make_lesson(memory, "Scheduled exports run at night.")
    elsewhere = MemoryFactory(persona=other_persona, project=project)
    make_lesson(elsewhere, "Rotate the signing keys every 90 days.")
    found = lessons_holding(memory.pk, {"checkout": "checkout", "signing": "signing", "schedul": "scheduling"})
    assert len(found["checkout"]) == 6  # common: MAX_POSTINGS + 1 says so
    assert len(found["signing"]) == 1  # the other memory's lesson is not this memory's neighbour
    assert len(found["schedul"]) == 1  # the stem as a prefix holds "Scheduled"
    make_lesson(memory, "Refunds are computed in src/billing/refund.py.")
    path = "src/billing/refund.py"
    assert len(lessons_holding(memory.pk, {path: path})[path]) == 1  # a path: the phrase of its parts


def test_a_batch_costs_the_same_queries_in_a_small_and_a_larger_memory(memory, other_persona, project):
    from tests.factories import MemoryFactory

    counts = []
    for target, n in ((memory, 40), (MemoryFactory(persona=other_persona, project=project), 400)):
        lessons, batch = generate(n, planted=2, batch=8)
        seed(target, lessons)
        added = seed(target, batch)
        with CaptureQueriesContext(connection) as queries:
            created, _ = conflicts_detect(memory=target, lesson_ids=list(added))
        assert created == 2
        counts.append(len(queries))
    assert counts[0] == counts[1]


def test_a_batch_finds_what_a_full_pass_finds_with_it():
    lessons, batch = generate(600, planted=6, batch=12)
    every = [_lesson(i, text, day) for i, (text, day, _) in enumerate(lessons + batch)]
    new_ids = {lesson.id for lesson in every[len(lessons) :]}
    full = {f for f in detection.detect(every) if {f.older_id, f.newer_id} & new_ids}
    assert len(full) == 3
    assert set(detection.detect(every, sorted(new_ids))) == full


def test_the_neighbours_sharing_the_rarest_words_are_compared_first(monkeypatch):
    monkeypatch.setattr(detection, "MAX_NEIGHBOURS", 1)
    lessons = [
        _lesson(1, "Deploy staging worker builds with npm."),
        _lesson(99, "Deploy staging worker now builds with pnpm."),  # shares deploy, staging, worker, build
        *(_lesson(10 + i, f"Deploy staging note {i}.") for i in range(6)),  # share deploy, staging
        _lesson(30, "Worker build step."),
    ]
    neighbours = detection.Neighbours(lessons)
    assert neighbours.of(1) == {99}
    assert len(detection.detect(lessons)) == 1


@pytest.mark.parametrize("limit", [5, 200])
def test_a_full_pass_finds_each_lessons_neighbours_as_a_batch_would(monkeypatch, limit):
    monkeypatch.setattr(detection, "MAX_POSTINGS", limit)
    lessons, _ = generate(800, planted=8, batch=0)
    index = detection.Neighbours([_lesson(i, text, day) for i, (text, day, _) in enumerate(lessons)])
    every = index.every()
    assert every == {i: index.of(i) for i in index.lessons}
    assert sum(map(len, every.values())) > 50


def test_the_lookup_leaves_postgresqls_jit_setting_as_it_was(memory):
    if connection.vendor != "postgresql":
        pytest.skip("a PostgreSQL setting")
    make_lesson(memory, "Rotate the signing keys every 30 days.")
    with connection.cursor() as cursor:
        cursor.execute("SELECT set_config('jit', 'on', false)")
        assert len(lessons_holding(memory.pk, {"signing": "signing"})["signing"]) == 1
        cursor.execute("SHOW jit")
        assert cursor.fetchone() == ("on",)
