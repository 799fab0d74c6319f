"""`manage.py eval_promotions`: the four measures on a labelled corpus, and clear errors for a bad one."""

import io
import json
from datetime import date

import pytest
from django.core.management import CommandError, call_command

from memory.promotions import evaluation


def _corpus(tmp_path, memories):
    path = tmp_path / "corpus.json"
    path.write_text(json.dumps({"memories": memories}), encoding="utf-8")
    return path


def _lesson(key, day, theme, text="x"):
    return evaluation.CorpusLesson(
        id=key, key=str(key), text=text, day=date(2026, 1, day), category="", refs=[], theme=theme
    )


def test_the_measures_follow_their_definitions():
    memory = evaluation.CorpusMemory(
        name="m",
        threshold=3,
        holdout=False,
        lessons=[
            _lesson(1, 1, "a"),
            _lesson(2, 2, "a"),
            _lesson(3, 3, "a"),  # recurring
            _lesson(4, 1, "b"),
            _lesson(5, 2, "b"),
            _lesson(6, 3, "b"),  # recurring
            _lesson(7, 4, None),  # a decoy
            _lesson(8, 5, "c"),
            _lesson(9, 5, "c"),
            _lesson(10, 5, "c"),  # one day only: not recurring
        ],
    )
    scores = evaluation.score(memory, [[1, 2, 3], [4, 5, 7]])
    assert scores.as_dict() == {
        "candidates": 2,
        "candidate_precision": 0.5,
        "theme_recall": 0.5,
        "pair_precision": 0.667,
        "pair_recall": 0.667,
    }


def test_both_shipped_corpora_are_scored_per_memory_and_held_out_apart():
    out = io.StringIO()
    call_command("eval_promotions", stdout=out)
    text = out.getvalue()
    assert text.count("candidates  cand.prec") == 3
    assert "restatements.json" in text and "paraphrases.json" in text and "observations.json" in text
    assert "security-review (held out)" in text and "plataforma-infra (held out)" in text
    assert text.count("tuned memories") == 2 and text.count("held-out memories") == 2
    for corpus in evaluation.SHIPPED_CORPORA:
        memories = evaluation.load_corpus(corpus)
        assert sum(len(m.lessons) for m in memories) >= 60 and len(memories) >= 4


def test_the_word_rule_meets_its_targets_on_the_restatement_corpus():
    scores = evaluation.total(evaluation.evaluate(evaluation.load_corpus(evaluation.DEFAULT_CORPUS)))
    assert scores.candidate_precision >= 0.90
    assert scores.theme_recall >= 0.75
    assert scores.pair_precision >= 0.85
    assert scores.pair_recall >= 0.75


def test_show_lists_the_candidates_by_lesson_id(tmp_path):
    path = _corpus(
        tmp_path,
        [
            {
                "name": "tiny",
                "lessons": [
                    {
                        "id": f"t{i}",
                        "date": f"2026-01-0{i}",
                        "theme": "same",
                        "text": "Feature flags live in config/flags.yml and are read at boot",
                    }
                    for i in (1, 2, 3)
                ],
            }
        ],
    )
    out = io.StringIO()
    call_command("eval_promotions", str(path), "--show", stdout=out)
    assert "t1, t2, t3" in out.getvalue()
    assert "tiny" in out.getvalue() and "1.00" in out.getvalue()


@pytest.mark.parametrize(
    "content, message",
    [
        ("not json", "not valid JSON"),
        (json.dumps({"memories": []}), 'non-empty "memories"'),
        (json.dumps({"memories": [{"lessons": [{"date": "2026-01-01", "text": ""}]}]}), 'non-empty "text"'),
        (json.dumps({"memories": [{"lessons": [{"date": "yesterday", "text": "a"}]}]}), "is not a date"),
        (
            json.dumps(
                {
                    "memories": [
                        {
                            "lessons": [
                                {"id": "a", "date": "2026-01-01", "text": "a"},
                                {"id": "a", "date": "2026-01-02", "text": "b"},
                            ]
                        }
                    ]
                }
            ),
            "used twice",
        ),
    ],
)
def test_a_bad_corpus_is_a_clear_error(tmp_path, content, message):
    path = tmp_path / "bad.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(CommandError, match=message):
        call_command("eval_promotions", str(path), stdout=io.StringIO())


def test_a_missing_corpus_is_a_clear_error(tmp_path):
    with pytest.raises(CommandError, match="cannot be read"):
        call_command("eval_promotions", str(tmp_path / "nope.json"), stdout=io.StringIO())


def test_pipeline_observations_are_scored_through_the_reflector_beside_detection():
    out = io.StringIO()
    call_command("eval_promotions", stdout=out)
    text = out.getvalue()
    reflector = text[text.index("observations.json") :]
    assert "engine: offline reflector (detection's grouping, no dates rule)" in reflector
    assert "checkout-service" in reflector and "mobile-app" in reflector
    assert text.index("restatements.json") < text.index("observations.json")  # reported beside detection's


def test_the_reflector_groups_observations_as_detection_does():
    memories = evaluation.load_corpus(evaluation.OBSERVATION_CORPUS)
    assert {m.proposed_by for m in memories} == {"reflector"}
    assert sum(len(m.lessons) for m in memories) >= 60
    results = evaluation.evaluate(memories)
    assert max(len(g) for r in results for g in r.groups) <= 12
    scores = evaluation.total(results)
    # The word grouping the reflector used before scored 0.31 / 0.31 / 0.28 / 0.91 on this corpus,
    # with an 11-observation reflection of five different lessons.
    assert scores.candidate_precision >= 0.5
    assert scores.theme_recall >= 0.6
    assert scores.pair_precision >= 0.6
    assert scores.pair_recall >= 0.9


def test_a_reflector_theme_needs_two_observations_not_three_dates():
    memory = evaluation.CorpusMemory(
        name="m",
        threshold=3,
        holdout=False,
        proposed_by="reflector",
        lessons=[
            _lesson(1, 1, "a"),
            _lesson(2, 1, "a"),  # one day, two observations: a reflection to find
            _lesson(3, 2, "b"),
            _lesson(4, 3, None),
        ],
    )
    scores = evaluation.score(memory, [[1, 2], [3, 4]])
    assert scores.as_dict() == {
        "candidates": 2,
        "candidate_precision": 0.5,
        "theme_recall": 1.0,
        "pair_precision": 0.5,
        "pair_recall": 1.0,
    }


def test_an_unknown_proposer_is_a_clear_error(tmp_path):
    path = _corpus(tmp_path, [{"lessons": [{"date": "2026-01-01", "text": "a"}]}])
    path.write_text(
        json.dumps({"proposed_by": "oracle", "memories": [{"lessons": [{"date": "2026-01-01", "text": "a"}]}]})
    )
    with pytest.raises(CommandError, match='"proposed_by" must be'):
        call_command("eval_promotions", str(path), stdout=io.StringIO())
