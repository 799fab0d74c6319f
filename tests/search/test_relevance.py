"""Relevance on the labelled corpus (memory/search/corpus/lessons.json), on the database under test."""

import json
from io import StringIO

import pytest
from django.core.management import call_command

from memory.search.evaluation import CORPUS, HELDOUT_QUESTIONS, LEAD_QUESTIONS, evaluate

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("via", ["web", "agents"])
def test_expected_lessons_rank_in_the_top_five_for_nine_queries_in_ten(via):
    outcome = evaluate(via=via)
    assert outcome.queries >= 40
    assert outcome.score >= 0.9, outcome.misses


@pytest.mark.parametrize("questions", [LEAD_QUESTIONS, HELDOUT_QUESTIONS], ids=["lead", "held-out"])
def test_searches_typed_as_a_lead_types_them_find_the_lesson_on_the_search_page(questions):
    outcome = evaluate(queries=questions, via="web")
    assert outcome.queries >= 30
    assert outcome.score >= 0.9, outcome.misses
    # The agents' strict search finds far fewer of them: the page's fallback is what answers them.
    assert evaluate(queries=questions, via="agents").score < 0.7


def test_eval_search_prints_the_figure():
    out = StringIO()
    call_command("eval_search", stdout=out)
    assert "search relevance" in out.getvalue() and "top 5" in out.getvalue()


def test_among_everything_the_corpus_competes_with_the_other_lessons_of_the_store():
    from tests.factories import MemoryFactory, make_lesson

    # Five lessons elsewhere that say what a corpus lesson says, twice over.
    corpus = json.loads(CORPUS.read_text())
    lesson = next(item["text"] for item in corpus["lessons"] if item["key"] == "de-tests")
    memory = MemoryFactory()
    for i in range(5):
        make_lesson(memory, f"{lesson} {lesson} ({i})")
    out = StringIO()
    call_command("eval_search", "--among-everything", stdout=out)
    text = out.getvalue()
    assert (
        "miss (corpus queries, web): 'Zeitzone Test' expected ['de-tests'], top 5: ['other', 'other', 'other', 'other', 'other']"
        in text
    )
    assert "(sqlite" in text or "(postgresql" in text
    assert "among every lesson" in text and "agents" not in text
