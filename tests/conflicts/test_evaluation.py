from django.core.management import call_command

from memory.conflicts import evaluation


def test_offline_detector_meets_its_targets_on_the_shipped_corpus():
    scores = evaluation.score(evaluation.load_corpus(evaluation.DEFAULT_CORPUS)).as_dict()
    assert scores["precision"] >= 0.85
    assert scores["explicit_recall"] >= 0.60
    assert scores["false_alarms"] <= 0.05
    assert scores["direction"] >= 0.95
    assert scores["expiry_precision"] >= 0.9
    assert scores["condition_precision"] >= 0.9 and scores["condition_recall"] >= 0.8
    assert scores["condition_false_alarms"] <= 0.05


def test_the_command_prints_the_scores(capsys):
    call_command("eval_conflicts")
    out = capsys.readouterr().out
    assert "precision" in out and "explicit_recall" in out and "false_alarms" in out
    assert "condition_precision" in out and "condition_recall" in out


def test_condition_pairs_are_scored_apart_from_the_detectors_recall(tmp_path):
    corpus = tmp_path / "corpus.json"
    corpus.write_text(
        """{"memories": [{"name": "m", "lessons": [
        ["a", "2026-01-01", "working", "Keep the shim until Django 5.2 ships."],
        ["b", "2026-02-01", "working", "Django 5.2 shipped."],
        ["c", "2026-02-02", "working", "Django 5.2 ships next month."]],
        "expires_when": {"a": "Django 5.2 ships"},
        "pairs": [["a", "b", "supersedes", "condition"], ["a", "c", "compatible", "hard"]]}]}"""
    )
    scores = evaluation.score(evaluation.load_corpus(corpus))
    assert (scores.explicit, scores.condition, scores.condition_hard) == (0, 1, 1)
    assert (scores.condition_found, scores.condition_correct, scores.condition_hard_found) == (1, 1, 0)
