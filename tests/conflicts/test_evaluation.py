from django.core.management import call_command

from memory.conflicts import evaluation


def test_offline_detector_meets_its_targets_on_the_shipped_corpus():
    scores = evaluation.score(evaluation.load_corpus(evaluation.DEFAULT_CORPUS)).as_dict()
    assert scores["precision"] >= 0.85
    assert scores["explicit_recall"] >= 0.60
    assert scores["false_alarms"] <= 0.05
    assert scores["direction"] >= 0.95
    assert scores["expiry_precision"] >= 0.9


def test_the_command_prints_the_scores(capsys):
    call_command("eval_conflicts")
    out = capsys.readouterr().out
    assert "precision" in out and "explicit_recall" in out and "false_alarms" in out
