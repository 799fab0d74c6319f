"""The query language: what a query asks for, whatever is typed."""

import random

from memory.search import terms
from memory.search.terms import MAX_QUERY_CHARS, fts5_match, parse, pg_prefix_tsquery, stems, word_stems, words


def test_words_phrases_or_and_exclusions():
    query = parse('"npm ci" or yarn -flaky retries')
    assert [t.words for t in query.terms] == [["npm", "ci"], ["flaky"], ["retries"]]
    assert query.terms[0].alternatives[0].words == ["yarn"]
    assert query.terms[1].negated
    assert query.positive_words == ["npm", "ci", "yarn", "retries"]


def test_code_tokens_are_kept_as_written():
    query = parse("src/billing/refund.py pydantic<2 #L20 --no-verify utf-8")
    assert query.codes == [
        ("src/billing/refund.py", False),
        ("pydantic<2", False),
        ("#L20", False),
        ("--no-verify", False),
        ("utf-8", False),
    ]


def test_stems_cover_english_german_spanish():
    assert "datenbank" in stems("Datenbanken").split()
    assert "consult" in stems("consultas").split()
    assert stems("refund") == ""  # the word is its own stem: the text column holds it
    assert "retri" in stems("retries").split()


def _stems_word_by_word(text):
    return " ".join(s for w in words(text) for s in word_stems(w) if s != w)


def test_stems_are_each_words_differing_stems_in_order(monkeypatch):
    """The index's stems column is, word by word, the stems that differ from the word, however the
    text is spaced or punctuated, and stays so when its caches are emptied."""
    monkeypatch.setattr(terms, "INDEX_WORDS_KEPT", 50)
    rng = random.Random(5)
    alphabet = "aeioustrnäöüßñéç_0123456789²١İﬁ\u0301 -/.#<>()\t\n\x1c\x85\xa0\u2028\u3000"
    texts = ["Refunds retried, Datenbanken (case 12) consultas src/billing/refund.py 2024 ünïcödé"]
    texts += ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40))) for _ in range(2_000)]
    for text in texts:
        assert stems(text) == _stems_word_by_word(text), repr(text)
    assert stems("Refunds, refunds") == "refund refund"  # a word's stems once per occurrence, in order
    assert stems("") == stems(None) == stems("42 007 3.14") == ""


def test_nothing_to_search_for():
    for text in ["", "-", "- - -", "or", "or or -x", '"', '""', "-refund", "\x00\x01\x1f", "()*^"]:
        query = parse(text)
        assert not query, text
        assert fts5_match(query) == ""
        assert pg_prefix_tsquery(query) == ""


def test_unbalanced_quotes_and_long_or_control_input_parse():
    assert parse('"unbalanced phrase').terms[0].words == ["unbalanced", "phrase"]
    assert parse("re\x00fund\x07 retries").positive_words == ["re", "fund", "retries"]
    long = parse("refund " * 3000)
    assert len(long.text) <= MAX_QUERY_CHARS and len(long.terms) <= 24


def test_quotes_in_fts5_expression_are_escaped():
    expr = fts5_match(parse('ab"cd ef'))
    assert expr.count('"') % 2 == 0


def test_a_relaxed_query_asks_for_any_telling_term_and_keeps_phrases_code_and_exclusions():
    query = parse('customer charged twice for a refund "dead letter" src/billing/refund.py -idempotent')
    relaxed = query.relaxed()
    assert relaxed is not None and relaxed.any_term
    kept = [t.words for t in relaxed.terms if not t.negated]
    assert kept == [
        ["customer"],
        ["charged"],
        ["twice"],
        ["refund"],
        ["dead", "letter"],
        ["src", "billing", "refund", "py"],
    ]
    assert [t.words for t in relaxed.terms if t.negated] == [["idempotent"]]
    # Code stays whole but is no longer required as written; the exclusion still is checked.
    assert relaxed.codes == []
    assert relaxed.text == 'customer or charged or twice or refund or "dead letter" or "src/billing/refund.py"'
    assert relaxed.negated_text == "idempotent"
    expr = fts5_match(relaxed)
    # Any one term, each as written or by its stems (not as the start of a longer word: every match of
    # a relaxed query is ranked, and prefixes of common words widen it most).
    assert ') OR (text : "charged" OR {text stems} : ' in expr and ' OR text : "dead letter" OR ' in expr
    assert expr.endswith(' NOT (text : "idempotent" OR {text stems} : ("idempot" OR "idempotent"))')
    assert "*" not in expr


def test_nothing_to_relax_in_one_term_or_a_relaxed_query():
    assert parse("refund").relaxed() is None
    assert parse("refund or refunds").relaxed() is None  # any one of them is what it asks already
    assert parse("refund -webhook").relaxed() is None
    relaxed = parse("refund webhook").relaxed()
    assert relaxed is not None and relaxed.relaxed() is None


def test_a_query_of_only_little_words_keeps_them_when_relaxed():
    relaxed = parse("the and of").relaxed()
    assert relaxed is not None and [t.words for t in relaxed.terms] == [["the"], ["and"], ["of"]]
    assert [t.words for t in parse("die Zahlung para el pago").relaxed().terms] == [["zahlung"], ["pago"]]
