"""Relevance on the labelled corpus (corpus/lessons.json): the share of queries whose expected
lessons all rank in the top 5. Seeds its lessons in a scratch memory inside a transaction it rolls
back, so nothing stays written.

Three sets of queries over the same lessons: the corpus's own (short, each word in the lesson in some
form), corpus/lead_questions.json (as a lead types them: several words, some the lesson lacks) and
corpus/heldout_questions.json (written by someone who never saw the engine).
Each is searched the way /search/ does it (`web`) or the agents' lesson search does (`agents`)."""

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.db import transaction
from django.utils import timezone

CORPUS = Path(__file__).parent / "corpus" / "lessons.json"
LEAD_QUESTIONS = Path(__file__).parent / "corpus" / "lead_questions.json"
HELDOUT_QUESTIONS = Path(__file__).parent / "corpus" / "heldout_questions.json"
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


def evaluate(
    path: Path = CORPUS, *, queries: Path | None = None, via: str = "web", among_everything: bool = False
) -> Outcome:
    """The outcome of the queries of `queries` (default: the corpus's own) over the corpus's lessons:
    within their project, or `among_everything` in the database (a lesson not the corpus's is "other")."""
    from django.contrib.auth import get_user_model

    from memory.models import Lesson
    from memory.search.selectors import Filters, ranked_for_memory, search

    corpus = json.loads(path.read_text())
    asked = json.loads(queries.read_text())["queries"] if queries else corpus["queries"]
    outcome = Outcome()
    try:
        with transaction.atomic():
            memory, keys = _seed(corpus)
            lead = get_user_model().objects.create(username="search-evaluation", is_superuser=True)
            for item in asked:
                if via == "web":
                    filters = Filters() if among_everything else Filters(project=memory.project_id)
                    results = search(lead, item["q"], filters)
                    ids = [hit.lesson.pk for hit in results.hits]
                else:
                    lessons = ranked_for_memory(Lesson.objects.filter(memory=memory), item["q"])
                    ids = list(lessons.values_list("pk", flat=True)[:TOP])
                top = [keys.get(pk, "other") for pk in ids[:TOP]]
                outcome.queries += 1
                if set(item["expect"]) <= set(top):
                    outcome.hits += 1
                else:
                    outcome.misses.append((item["q"], item["expect"], top))
            raise _Rollback
    except _Rollback:
        pass
    return outcome
