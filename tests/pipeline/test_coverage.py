"""Coverage tags: pending reflections and core lessons citing a working lesson."""

from memory import services
from memory.models import PromotionCandidate
from memory.pipeline.coverage import coverage_counts, coverage_tag
from tests.factories import make_lesson

SYSTEM = services.Actor.system("test")


def cite(memory, lessons, status="pending"):
    candidate = PromotionCandidate.objects.create(
        memory=memory, text="r", category="PATTERN", evidence={}, fingerprint="x", engine="offline", status=status
    )
    candidate.supporting.set(lessons)


def test_tags_follow_the_number_of_citations(memory, django_assert_num_queries):
    uncited, cited, reinforced = (make_lesson(memory, t) for t in ("a one", "b two", "c three"))
    cite(memory, [cited, reinforced])
    cite(memory, [reinforced])
    cite(memory, [reinforced], status="rejected")  # not current: does not count
    make_lesson(memory, "core one", tier="core", category="PATTERN", derived_from=[reinforced])
    make_lesson(memory, "core two", tier="core", category="PATTERN", derived_from=[reinforced])
    gone = make_lesson(memory, "core gone", tier="core", category="PATTERN", derived_from=[reinforced, cited])
    services.lesson_delete(lesson=gone, actor=SYSTEM)
    with django_assert_num_queries(2):
        counts = coverage_counts(memory)
    assert counts.get(uncited.pk, 0) == 0 and counts[cited.pk] == 1 and counts[reinforced.pk] == 4
    assert [coverage_tag(counts.get(lesson.pk, 0)) for lesson in (uncited, cited, reinforced)] == [
        "uncited",
        "cited",
        "reinforced",
    ]
    assert coverage_tag(3) == "cited"


def test_memory_page_shows_the_tag_on_working_rows(client_for, viewer, memory):
    lesson = make_lesson(memory, "Deploys go out on Fridays.")
    make_lesson(memory, "Friday deploys", tier="core", category="PATTERN", derived_from=[lesson])
    page = client_for(viewer).get(memory.get_absolute_url())
    html = page.content.decode()
    assert 'data-coverage="cited"' in html and html.count("data-coverage=") == 1
