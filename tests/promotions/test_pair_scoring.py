"""Detection's pair scoring (detection._pair_dots, numpy) against the plain loop over an inverted index
it replaced: the same pairs with the same sums to the last bit, since the groups found near a
threshold depend on them, and what the labelled corpora find must not move."""

import random
from collections import defaultdict

import pytest

from memory.promotions import detection
from memory.promotions.detection import LessonFacts, Similarity, _pair_dots


def _loop_dots(vectors):
    """The inverted-index loop: every pair of a term's postings adds wi * wj, term after term."""
    df = defaultdict(int)
    for vector in vectors:
        for term in vector:
            df[term] += 1
    postings = defaultdict(list)
    for position, vector in enumerate(vectors):
        for term, weight in vector.items():
            if df[term] > 1:
                postings[term].append((position, weight))
    n, dots = len(vectors), defaultdict(float)
    for entries in postings.values():
        for k, (i, wi) in enumerate(entries):
            for j, wj in entries[k + 1 :]:
                dots[i * n + j] += wi * wj
    return dict(dots)


def _columns(vectors):
    numbers, terms, positions, weights = {}, [], [], []
    df = defaultdict(int)
    for vector in vectors:
        for term in vector:
            df[term] += 1
    for position, vector in enumerate(vectors):
        for term, weight in vector.items():
            if df[term] > 1:
                terms.append(numbers.setdefault(term, len(numbers)))
                positions.append(position)
                weights.append(weight)
    return terms, positions, weights


@pytest.mark.parametrize("seed", range(8))
def test_the_same_sums_bit_for_bit_as_the_loop(seed):
    rng = random.Random(seed)
    vocabulary = [f"t{k}" for k in range(rng.choice((5, 40, 300)))]
    vectors = []
    for _ in range(rng.choice((2, 30, 400))):
        words = rng.sample(vocabulary, rng.randint(1, min(12, len(vocabulary))))
        # Weights of many magnitudes, so that adding them in another order would change low bits.
        vectors.append({w: rng.random() * 10 ** rng.randint(-6, 0) for w in words})
    expected = _loop_dots(vectors)
    keys, dots = _pair_dots(*_columns(vectors), len(vectors))
    found = dict(zip(keys.tolist(), dots.tolist()))
    assert found == expected  # same keys, and == on floats: every bit
    assert keys.tolist() == sorted(expected)


def test_the_bitwise_check_sees_a_change_of_order():
    """Adding the same products term after term in reverse moves low bits of some sums: the check above
    would catch a scoring that adds them in another order."""
    rng = random.Random(3)
    vocabulary = [f"t{k}" for k in range(40)]
    vectors = [{w: rng.random() * 10 ** rng.randint(-6, 0) for w in rng.sample(vocabulary, 12)} for _ in range(400)]
    expected = _loop_dots(vectors)
    terms, positions, weights = _columns(vectors)
    last = max(terms)
    keys, dots = _pair_dots([last - t for t in terms], positions, weights, len(vectors))  # terms numbered backwards
    reordered = dict(zip(keys.tolist(), dots.tolist()))
    assert reordered.keys() == expected.keys()
    assert any(reordered[k] != expected[k] for k in expected)
    assert all(abs(reordered[k] - expected[k]) < 1e-12 for k in expected)


def test_no_shared_term_gives_no_pairs():
    keys, dots = _pair_dots([], [], [], 3)
    assert len(keys) == 0 and len(dots) == 0
    keys, dots = _pair_dots(*_columns([{"a": 1.0}, {"b": 1.0}]), 2)
    assert len(keys) == 0


def _facts(texts):
    from collections import Counter
    from datetime import date

    from memory.promotions.text import Analyzer

    analyzer = Analyzer()
    return [
        LessonFacts(
            id=k + 1,
            text_key=str(k),
            terms=Counter(analyzer.terms(t)),
            paths=frozenset(),
            dates=frozenset({date(2026, 1, 1 + k % 28)}),
        )
        for k, t in enumerate(texts)
    ]


def test_similarity_reads_pairs_found_and_computes_the_others():
    lessons = _facts(
        [
            "Retry the payment webhook with exponential backoff",
            "Payment webhooks need exponential backoff on retry",
            "Use the staging database for migration rehearsals",
            "Rehearse every migration on the staging database first",
        ]
    )
    sim = Similarity(lessons)
    assert sim(0, 1) == sim(1, 0) > sim.threshold  # a pair found through the index, either way round
    assert sim(0, 2) == 0.0  # no shared term: computed on demand, and nothing
    assert (0, 1, sim(0, 1)) in sim.strong and (2, 3, sim(2, 3)) in sim.strong
    assert detection.similarities(lessons)[(0, 1)] == sim(0, 1)
