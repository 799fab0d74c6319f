"""`eval_promotions --engine`: the whole detection with a model engine, through the real SDKs against
the local fake server, scored like the offline rule and with its calls and tokens."""

import io
import json

import pytest
from django.core.management import CommandError, call_command

from memory.promotions import evaluation
from tests.promotions.model_oracle import ThemeOracle
from tests.promotions.paraphrases import PARAPHRASE_MEMORY


@pytest.fixture
def corpus(tmp_path):
    path = tmp_path / "paraphrases.json"
    path.write_text(json.dumps({"memories": [PARAPHRASE_MEMORY]}, ensure_ascii=False), encoding="utf-8")
    return path


def _oracle(path):
    (memory,) = evaluation.load_corpus(path)
    return ThemeOracle({lesson.id: lesson.theme for lesson in memory.lessons})


def _run(*args):
    out = io.StringIO()
    call_command("eval_promotions", *map(str, args), stdout=out)
    return out.getvalue()


def _all_row(text):
    """candidates, candidate precision, recall, pair precision, pair recall, calls, tokens of the 'all' row."""
    (row,) = [line for line in text.splitlines() if line.startswith("all ")]
    values = row.split()[1:]
    return [float(v) for v in values]


def test_offline_is_the_default_and_needs_no_key(corpus, settings):
    settings.OPENAI_API_KEY = settings.ANTHROPIC_API_KEY = ""
    default, offline = _run(corpus), _run(corpus, "--engine", "offline")
    assert default == offline
    assert "engine: offline" in offline
    _candidates, *_, calls, tokens = _all_row(offline)
    assert (calls, tokens) == (0, 0)


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_model_that_groups_paraphrases_raises_recall(corpus, llm_settings, llm_server, provider):
    fake = getattr(llm_server, provider)
    oracle = _oracle(corpus)
    fake.respond(oracle)

    offline = _all_row(_run(corpus))
    text = _run(corpus, "--engine", provider, "--show")
    model = _all_row(text)

    assert offline[2] < 0.5  # the word rule finds almost none of these restatements
    assert model[2] == 1.0 and model[1] == 1.0  # every recurring lesson, and nothing else
    assert model[4] > offline[4]
    # one grouping batch for 13 lessons, then one check per merged group
    assert oracle.asked["propose_groups"] == 1 and oracle.asked["verify_group"] == 3
    assert model[5] == len(fake.requests) == 4
    assert model[6] == 4 * 15  # the fake server's usage: 10 in, 5 out per call
    shown = [line.strip() for line in text.splitlines() if line.startswith("    ")]
    # the word rule's m1, m2, x4 (a decoy on the same table) merged into the model's m1, m2, m3; the check drops x4
    assert sorted(shown) == ["m1, m2, m3", "r1, r2, r3", "t1, t2, t3"]
    assert f"engine: {provider}" in text and "model calls: 4, tokens in: 40, tokens out: 20" in text


def test_a_missing_key_is_a_clear_error(corpus, llm_settings):
    llm_settings.OPENAI_API_KEY = ""
    with pytest.raises(CommandError, match="OPENAI_API_KEY"):
        _run(corpus, "--engine", "openai")


def test_an_unusable_answer_is_a_clear_error(corpus, llm_settings, llm_server):
    llm_server.openai.tool_calls([("propose_groups", {"groups": [{"ids": [1, 999], "summary": "s", "reason": "r"}]})])
    with pytest.raises(CommandError, match=r"not sent in this batch: \[999\]"):
        _run(corpus, "--engine", "openai")


def test_a_token_budget_stops_the_run_before_any_call(corpus, llm_settings, llm_server):
    with pytest.raises(CommandError, match="budget of 500 tokens"):
        _run(corpus, "--engine", "openai", "--token-budget", "500")
    assert llm_server.openai.requests == []
