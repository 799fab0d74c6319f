"""Relevance on the labelled corpus (corpus/lessons.json): the share of queries whose expected
lessons all rank in the top 5. Seeds its lessons in a scratch memory inside a transaction it rolls
back, so nothing stays written."""

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.db import transaction
from django.utils import timezone

CORPUS = Path(__file__).parent / "corpus" / "lessons.json"
TOP = 5


@dataclass
class Outcome:
    queries: int = 0
    hits: int = 0
    misses: list[tuple[str, list[str], list[str]]] = field(default_factory=list)  # (query, expected, top keys)

    @property
    def score(self) -> float:
        return self.hits / self.queries if self.queries else 0.0


class _Rollback(Exception):
    pass


def _seed(corpus: dict[str, Any]) -> tuple[Any, dict[int, str]]:
    from memory import services
    from memory.models import ChangeBatch
    from memory.refs import parse_ref
    from personas.models import Persona, Project

    persona = Persona.objects.create(name="Search evaluation", role="Implementer")
    project = Project.objects.create(slug="search-evaluation", name="Search evaluation")
    memory = services.memory_get_or_create(persona=persona, project=project)
    batch = services.batch_create(
        memory=memory, kind=ChangeBatch.Kind.IMPORT, actor=services.Actor.system("search evaluation")
    )
    today = timezone.localdate()
    rows = [
        services.NewLesson(
            batch.pk,
            memory.pk,
            "working",
            "OBSERVATION",
            item["text"],
            today,
            i,
            refs=[parse_ref(r) for r in item["refs"]],
        )
        for i, item in enumerate(corpus["lessons"])
    ]
    ids = services.lessons_bulk_create(rows)
    return memory, {pk: item["key"] for pk, item in zip(ids, corpus["lessons"], strict=True)}


def evaluate(path: Path = CORPUS) -> Outcome:
    from memory.models import Lesson
    from memory.search.selectors import ranked_for_memory

    corpus = json.loads(path.read_text())
    outcome = Outcome()
    try:
        with transaction.atomic():
            memory, keys = _seed(corpus)
            for item in corpus["queries"]:
                lessons = ranked_for_memory(Lesson.objects.filter(memory=memory), item["q"])
                top = [keys[pk] for pk in lessons.values_list("pk", flat=True)[:TOP]]
                outcome.queries += 1
                if set(item["expect"]) <= set(top):
                    outcome.hits += 1
                else:
                    outcome.misses.append((item["q"], item["expect"], top))
            raise _Rollback
    except _Rollback:
        pass
    return outcome
