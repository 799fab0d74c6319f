"""Relevance on the labelled corpus (memory/search/corpus/lessons.json), on the database under test."""

from io import StringIO

import pytest
from django.core.management import call_command

from memory.search.evaluation import evaluate

pytestmark = pytest.mark.django_db


def test_expected_lessons_rank_in_the_top_five_for_nine_queries_in_ten():
    outcome = evaluate()
    assert outcome.queries >= 40
    assert outcome.score >= 0.9, outcome.misses


def test_eval_search_prints_the_figure():
    out = StringIO()
    call_command("eval_search", stdout=out)
    assert "search relevance" in out.getvalue() and "top 5" in out.getvalue()
