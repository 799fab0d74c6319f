"""A query word matches longer words as a prefix unless it is too widespread (memory/search/prefixes.py)."""

from dataclasses import replace

import pytest
from django.core.cache import caches
from django.db import connection
from django.urls import reverse

from memory.models import Lesson
from memory.search import prefixes
from memory.search.selectors import ranked_for_memory
from memory.search.terms import parse, pg_prefix_tsquery, prefix_words
from tests.factories import make_lesson

pytestmark = pytest.mark.django_db
URL = reverse("search")


def texts(response):
    return [hit.lesson.text for hit in response.context["results"].hits]


def analyse():
    """What ANALYZE tells the planner (and prefixes.py) about the lessons, read afresh."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE memory_lesson")
    caches["local"].clear()


def test_the_words_a_query_asks_for_as_prefixes():
    query = parse('docker "exact phrase" src/app.py dockerfile or compose ci')
    assert prefix_words(query) == ["docker", "dockerfile", "compose"]  # "ci" is shorter than PREFIX_MIN
    assert pg_prefix_tsquery(query) == (
        "'docker':* & ('exact' <-> 'phrase') & ('src' <-> 'app' <-> 'py') & ('dockerfile':* | 'compose':*) & 'ci'"
    )
    assert pg_prefix_tsquery(replace(query, whole=frozenset({"docker", "compose"}))) == (
        "'docker' & ('exact' <-> 'phrase') & ('src' <-> 'app' <-> 'py') & ('dockerfile':* | 'compose') & 'ci'"
    )


def test_a_longer_word_is_found_until_the_word_fills_too_many_lessons(client, two_teams, monkeypatch):
    red = two_teams["red"]
    client.force_login(red["lead"])
    make_lesson(red["memory"], "The Dockerfile pins the base image by digest")
    make_lesson(red["memory"], "Docker layers are cached between builds")
    analyse()
    assert set(texts(client.get(URL, {"q": "docker"}))) == {
        "The Dockerfile pins the base image by digest",
        "Docker layers are cached between builds",
    }
    for i in range(12):
        make_lesson(red["memory"], f"Docker build {i} runs as a non-root user")
    analyse()
    monkeypatch.setattr(prefixes, "PREFIX_MAX_LESSONS", 5)
    found = texts(client.get(URL, {"q": "docker"}))
    # Thirteen lessons say "docker": a prefix would gather every word starting with it, so the word
    # matches as written and by its forms, and "Dockerfile" alone no longer does.
    assert "Docker layers are cached between builds" in found and len(found) == 13
    assert "The Dockerfile pins the base image by digest" not in found
    assert prefixes.widespread(["docker", "digest", "imag"]) == {"docker"}
    # A rare word that starts a widespread one is widespread too: its prefix gathers them all.
    assert prefixes.widespread(["dock", "dockerfile"]) == {"dock"}
    # Its forms still match: a plural the stemmers relate, on both databases.
    make_lesson(red["memory"], "Dockers of the staging fleet restart at night")
    analyse()
    assert "Dockers of the staging fleet restart at night" in texts(client.get(URL, {"q": "docker"}))
    # The agents' search reads the same index the same way.
    agents = [lesson.text for lesson in ranked_for_memory(Lesson.objects.filter(memory=red["memory"]), "docker")]
    assert len(agents) == 14 and "The Dockerfile pins the base image by digest" not in agents


def test_postgresql_keeps_every_prefix_until_analyze_and_sqlite_counts_at_once(client, two_teams, monkeypatch):
    red = two_teams["red"]
    client.force_login(red["lead"])
    make_lesson(red["memory"], "The Dockerfile pins the base image by digest")
    for i in range(12):
        make_lesson(red["memory"], f"Docker build {i} runs as a non-root user")
    monkeypatch.setattr(prefixes, "PREFIX_MAX_LESSONS", 5)
    caches["local"].clear()
    found = texts(client.get(URL, {"q": "docker"}))
    # PostgreSQL knows which words are widespread only from ANALYZE's statistics, which these
    # lessons are not in yet; SQLite reads its index, which holds them as soon as they are written.
    unanalysed = connection.vendor == "postgresql"
    assert ("The Dockerfile pins the base image by digest" in found) == unanalysed
    assert len(found) == (13 if unanalysed else 12)


def test_when_nothing_holds_a_widespread_word_its_longer_words_are_asked_for_after_all(client, two_teams, monkeypatch):
    red = two_teams["red"]
    blue = two_teams["blue"]
    client.force_login(red["lead"])
    # "docker" is widespread in blue's memories; red's only lesson about it says "Dockerfile".
    make_lesson(red["memory"], "The Dockerfile pins the base image by digest")
    for i in range(12):
        make_lesson(blue["memory"], f"Docker build {i} runs as a non-root user")
    analyse()
    monkeypatch.setattr(prefixes, "PREFIX_MAX_LESSONS", 5)
    assert prefixes.widespread(["docker"]) == {"docker"}
    response = client.get(URL, {"q": "docker"})
    assert texts(response) == ["The Dockerfile pins the base image by digest"]
    assert not response.context["results"].relaxed  # every word is held, as the start of a longer one
    agents = ranked_for_memory(Lesson.objects.filter(memory=red["memory"]), "docker pins")
    assert [lesson.text for lesson in agents] == ["The Dockerfile pins the base image by digest"]
