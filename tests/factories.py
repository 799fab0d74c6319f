"""Test data, created through the same services the product uses."""

import itertools
from datetime import date

import factory

from memory import services
from memory.models import Memory
from personas.models import Persona, Project

_seq = itertools.count(1)


class PersonaFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Persona

    name = factory.Sequence(lambda n: f"Persona {n}")
    role = "Tech Lead"


class ProjectFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Project

    slug = factory.Sequence(lambda n: f"project-{n}")
    name = factory.Sequence(lambda n: f"Project {n}")
    repository_url = "https://github.com/example/app"
    repository_ref = "main"


class MemoryFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Memory

    persona = factory.SubFactory(PersonaFactory)
    project = factory.SubFactory(ProjectFactory)


SYSTEM = services.Actor.system("tests")


def make_lesson(memory, text=None, *, category="OBSERVATION", tier="working", refs=None, day=None, **kwargs):
    """Create one lesson through the service (history and version included)."""
    n = next(_seq)
    return services.lesson_create(
        memory=memory,
        text=text or f"Lesson number {n} about src/module_{n}.py",
        category=category,
        tier=tier,
        refs=refs,
        lesson_date=day or date(2026, 1, 1),
        actor=kwargs.pop("actor", SYSTEM),
        **kwargs,
    )
