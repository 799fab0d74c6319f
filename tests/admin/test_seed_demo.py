"""`manage.py seed_demo`: realistic demo data, created through the services, idempotent."""

import io
import sys
import types
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.db.models import Count

from memory.demo import data, seed
from memory.models import (
    Change,
    ChangeBatch,
    Lesson,
    LessonConfirmation,
    LessonRef,
    LessonStatus,
    Memory,
)
from personas.models import Persona, Project

MODELS = [Persona, Project, Memory, Lesson, LessonRef, LessonConfirmation, Change, ChangeBatch]
BIDI_OR_INVISIBLE = ["\u200b", "\u202e", "\u2066", "\u00ad"]


def _counts():
    return {m.__name__: m.objects.count() for m in MODELS}


def _run():
    out = io.StringIO()
    call_command("seed_demo", stdout=out)
    return out.getvalue()


@pytest.fixture
def seeded(db):
    return _run()


def test_second_run_adds_nothing(seeded):
    first = _counts()
    second_output = _run()
    assert _counts() == first
    assert "nothing added" in second_output


def test_personas_projects_and_volume(seeded):
    assert Persona.objects.count() == 4
    assert set(Persona.objects.values_list("role", flat=True)) == {
        "Security Reviewer",
        "Tech Lead / Architect",
        "QA Engineer",
        "Implementer",
    }
    assert Project.objects.count() == 2
    assert all(p.repository_url.startswith("https://github.com/") for p in Project.objects.all())
    assert Memory.objects.count() == 8
    assert Lesson.objects.count() >= 250
    assert "Demo lessons created" in seeded


def test_lessons_spread_over_tiers_categories_relevance_and_three_months(seeded):
    lessons = Lesson.objects.all()
    assert set(lessons.values_list("tier", flat=True)) == {"core", "working"}
    assert set(lessons.values_list("category", flat=True)) == {
        "PATTERN",
        "DECISION",
        "ARCHITECTURE",
        "OBSERVATION",
        "HYPOTHESIS",
        "TODO",
    }
    assert set(lessons.values_list("relevance", flat=True)) == {"low", "medium", "high", "critical"}
    dates = lessons.values_list("lesson_date", flat=True)
    assert max(dates) - min(dates) >= timedelta(days=80)
    assert LessonRef.objects.filter(start_line__isnull=False, end_line__isnull=False).exists()
    assert LessonRef.objects.filter(start_line__isnull=True).exists()
    assert lessons.filter(protected=True).exists()
    assert lessons.filter(status=LessonStatus.DELETED).exists()
    superseded = lessons.filter(status=LessonStatus.SUPERSEDED)
    assert superseded.count() == len(data.SUPERSEDED)
    assert all(lesson.superseded_by and lesson.superseded_by.status == "active" for lesson in superseded)


def test_tricky_text_is_present(seeded):
    texts = list(Lesson.objects.values_list("text", flat=True))
    for ch in BIDI_OR_INVISIBLE:
        assert any(ch in t for t in texts), repr(ch)
    assert any("**" in t and "](https://" in t for t in texts)
    assert any("<script>" in t for t in texts)


def test_something_for_promotion_and_compaction(seeded):
    # a theme repeated on 3+ distinct dates in one memory
    for who, where, items in data.REPEATED_THEMES:
        memory = Memory.objects.get(persona__name=who, project__slug=where)
        dates = set(
            Lesson.objects.filter(memory=memory, text__in=[t for _, t, _ in items]).values_list(
                "lesson_date", flat=True
            )
        )
        assert len(dates) >= 3
    confirmed = LessonConfirmation.objects.values("lesson").annotate(n=Count("id")).get()
    assert confirmed["n"] == 2
    # one memory whose working tier is over its line limit
    over = [
        m
        for m in Memory.objects.all()
        if m.lessons.filter(tier="working", status="active").count() > m.max_working_lines
    ]
    assert len(over) == 1


def test_everything_went_through_the_services(seeded):
    assert Change.objects.filter(action="create").count() == Lesson.objects.count()
    assert set(Change.objects.values_list("action", flat=True)) == {"create", "delete", "supersede"}
    assert all(m.version > 0 for m in Memory.objects.all())


@pytest.mark.django_db
def test_demo_hooks_run_and_missing_ones_are_skipped(monkeypatch):
    calls = []
    feature = types.ModuleType("memory.fakefeature.demo")
    feature.seed = lambda stdout: calls.append(stdout) or stdout.write("fake feature seeded\n")
    monkeypatch.setitem(sys.modules, "memory.fakefeature.demo", feature)
    monkeypatch.setattr(
        seed, "DEMO_HOOKS", ["memory.not_a_feature.demo", "memory.reflection.no_demo_here", "memory.fakefeature.demo"]
    )
    output = _run()
    assert len(calls) == 1
    assert "fake feature seeded" in output


@pytest.mark.django_db
def test_a_hook_that_fails_to_import_something_else_is_not_hidden(monkeypatch):
    monkeypatch.setattr(seed, "DEMO_HOOKS", ["tests.admin.broken_demo_hook"])
    with pytest.raises(ImportError) as exc:
        _run()
    assert exc.value.name == "nightwatch_missing_dependency"


def test_default_hook_list():
    assert seed.DEMO_HOOKS == [
        "memory.promotions.demo",
        "memory.compaction.demo",
        "memory.refinement.demo",
        "memory.pipeline.demo",
        "memory.refs.demo",
    ]
