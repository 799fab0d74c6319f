"""The pipeline's reflections are grouped as detection groups lessons, and never grow past its cap."""

import io
from datetime import date

import pytest
from django.core.management import call_command

from memory.demo.seed import seed_demo
from memory.models import Lesson, Memory, PromotionCandidate
from memory.pipeline.services import pipeline_run_execute, pipeline_start
from memory.promotions import detection
from memory.promotions.reflections import ObservationGroups, reflection_propose, reflection_support
from memory.promotions.services import promotion_detect
from memory.services import Actor
from tests.factories import make_lesson

pytestmark = pytest.mark.django_db

CLIENT = "src/payments/client.ts#L40-L60"
# One lesson restated on three dates, and lessons about the same client that say other things.
RESTATED = [
    "Payments client: the response schema is missing `updatedAt`, so clients never see refund edits",
    "The payments client response schema still lacks `updatedAt`; refund edits stay invisible to clients",
    "Add `updatedAt` to the payments client response schema: clients miss refund edits without it",
]
OTHERS = [
    "Payments client: retries on 409 resubmit the same idempotency key",
    "Payments client: the timeout is the SDK default of 5 s",
    "Payments client: logs print the full card token at debug level",
]


def _lessons(memory, texts, start=1):
    return [make_lesson(memory, text, refs=CLIENT, day=date(2026, 2, start + i)) for i, text in enumerate(texts)]


def test_a_reflection_keeps_only_the_group_of_the_observation_it_is_about(memory):
    restated, others = _lessons(memory, RESTATED), _lessons(memory, OTHERS, start=10)
    groups = ObservationGroups.of_memory(memory)
    kept = groups.fit([lesson.pk for lesson in restated + others], RESTATED[0])
    assert kept == sorted(lesson.pk for lesson in restated)
    assert groups.passes(kept) and not groups.passes([lesson.pk for lesson in restated + others])


def test_support_is_added_only_when_the_grown_group_still_passes(memory):
    restated, others = _lessons(memory, RESTATED), _lessons(memory, OTHERS, start=10)
    reflection = reflection_propose(
        memory=memory,
        text=RESTATED[0],
        category="PATTERN",
        lessons=restated[:2],
        refs=[CLIENT],
        engine="offline",
        run_id=None,
    )
    reflection_support(candidate=reflection, lessons=[restated[2], *others])
    reflection.refresh_from_db()
    assert reflection.evidence["lessons"] == sorted(lesson.pk for lesson in restated)
    assert set(reflection.supporting.values_list("pk", flat=True)) == {lesson.pk for lesson in restated}


def test_support_never_changes_a_detection_candidate(memory):
    restated = _lessons(memory, RESTATED)
    (candidate,) = promotion_detect(memory=memory).created
    observation = make_lesson(memory, RESTATED[0] + " (seen again in the pipeline)", refs=CLIENT, day=date(2026, 3, 1))
    reflection_support(candidate=candidate, lessons=[observation])
    candidate.refresh_from_db()
    assert candidate.evidence["lessons"] == sorted(lesson.pk for lesson in restated)


def test_a_reflection_never_grows_past_the_cap(memory):
    texts = [
        f"Cart totals round half-up in src/cart/totals.ts; rounding drift shows on checkout run {i}" for i in range(16)
    ]
    lessons = [make_lesson(memory, t, refs="src/cart/totals.ts", day=date(2026, 1, 1 + i)) for i, t in enumerate(texts)]
    groups = ObservationGroups.of_memory(memory)
    found = groups.groups()
    assert found and all(len(g) <= detection.MAX_MEMBERS for g in found)
    reflection = reflection_propose(
        memory=memory,
        text=texts[0],
        category="PATTERN",
        lessons=[lesson for lesson in lessons if lesson.pk in found[0]],
        refs=[],
        engine="offline",
        run_id=None,
    )
    reflection_support(candidate=reflection, lessons=lessons, groups=groups)
    reflection.refresh_from_db()
    assert len(reflection.evidence["lessons"]) <= detection.MAX_MEMBERS
    with pytest.raises(ValueError):
        reflection_propose(
            memory=memory, text=texts[0], category="PATTERN", lessons=lessons, refs=[], engine="offline", run_id=None
        )


def test_demo_after_a_pipeline_run_everywhere_and_detect_now(db):
    """The acceptance line: no pending candidate holds more than 12 lessons, and every reflection's
    lessons pass detection's own membership test."""
    seed_demo(io.StringIO())
    for memory in Memory.objects.order_by("id"):
        run = pipeline_start(memory=memory, actor=Actor.system("test"))
        pipeline_run_execute(run_id=run.pk)
        promotion_detect(memory=memory)
    pending = list(PromotionCandidate.objects.filter(status="pending"))
    assert pending and max(len(c.evidence["lessons"]) for c in pending) <= detection.MAX_MEMBERS
    reflections = [c for c in pending if c.evidence.get("source") == "reflector"]
    assert reflections
    for reflection in reflections:
        assert ObservationGroups.of_memory(reflection.memory).passes(reflection.evidence["lessons"]), reflection.text


def test_redetect_regroups_what_the_old_reflector_grew(memory):
    restated, others = _lessons(memory, RESTATED), _lessons(memory, OTHERS, start=10)
    (detected,) = promotion_detect(memory=memory).created
    # What the old rules left behind: a detection candidate grown by reflections, and a reflection of
    # every observation that shares words with the first.
    extra = others[0]
    detected.evidence = {**detected.evidence, "lessons": sorted(detected.evidence["lessons"] + [extra.pk])}
    detected.save()
    detected.supporting.add(extra)
    wide = PromotionCandidate.objects.create(
        memory=memory,
        text=RESTATED[1],
        category="PATTERN",
        engine="offline",
        detector="reflector",
        evidence={
            "lessons": [lesson.pk for lesson in restated + others],
            "confirmations": [],
            "source": "reflector",
            "run": 7,
        },
        fingerprint="old",
        supporting_state={str(lesson.pk): {"hash": lesson.content_hash} for lesson in restated + others},
    )
    wide.supporting.set(restated + others)

    out = io.StringIO()
    call_command("redetect_promotions", stdout=out)
    detected.refresh_from_db()
    wide.refresh_from_db()
    assert detected.status == "superseded" and "Re-evaluated" in detected.reason
    assert wide.status == "superseded" and "3 of its 6 observations" in wide.reason
    # The restated lesson waits once, as the regrouped reflection (detection does not propose a group
    # a pending candidate already holds).
    (replacement,) = PromotionCandidate.objects.filter(status="pending")
    assert replacement.evidence["source"] == "reflector" and replacement.evidence["run"] == 7
    assert replacement.evidence["lessons"] == sorted(lesson.pk for lesson in restated)
    assert "1 detection candidate had grown past its group; 1 reflection regrouped" in out.getvalue()
    call_command("redetect_promotions", stdout=out)
    assert (
        out.getvalue().rstrip().endswith("0 detection candidates had grown past their group; 0 reflections regrouped")
    )
    assert Lesson.objects.filter(memory=memory, status="active").count() == 6  # nothing lost
