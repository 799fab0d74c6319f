"""Find groups of working lessons that say the same thing.

Each lesson is a TF-IDF vector over its stemmed terms (text.py), weighted against the memory's own
lessons, so words that many lessons use count for little and words used by more than
common_term_limit() lessons not at all. Two lessons are as similar as the cosine of their vectors.
Text decides: a shared file never links two lessons. It helps tell a look-alike instead: words that
every lesson citing a file uses name the file's subject, not a lesson, and count for less when
deciding whether a member truly belongs (decoys that say something else about the same code share
exactly those words).

Groups are built by average linkage with two guards, closest clusters first:
- no two members may be unrelated (cosine below MIN_PAIR_SIMILARITY), so nothing joins through a
  chain (A like B, B like C, A unlike C gives no group holding A and C);
- every member's mean similarity to the rest of its group must reach link_similarity(n), so no
  member hangs on by a single link.
A group stops growing at MAX_MEMBERS, so a large cluster yields its tightest core. Then a member far
less tied to the group than the others are leaves it (trim_loose_members). A group counts only its
own members' dates (and their confirmations) against the distinct-dates rule.

Pairs are found through an inverted index of terms, so the cost follows how many lessons share
each term, not the square of the number of lessons.
"""

import gc
import heapq
import math
from collections import Counter, defaultdict
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import date

from memory.promotions.text import Analyzer

# A group is kept together when its members' mean similarity to one another reaches this, for the
# group as a whole and for every member (tuned on the labelled corpora in tests/promotions/corpus,
# held-out memories excluded).
LINK_SIMILARITY = 0.12
# In a large memory idf spreads wider and unrelated lessons sharing two mid-frequency words reach
# that cosine, so the threshold rises by this much for every tenfold above 100 lessons (set on the
# synthetic 10,000-lesson bench: 0.17 there).
LINK_SIMILARITY_PER_DECADE = 0.025


def link_similarity(n_lessons):
    return LINK_SIMILARITY + LINK_SIMILARITY_PER_DECADE * max(0.0, math.log10(max(n_lessons, 1) / 100))


# Two lessons below this are unrelated and are never in one group, whatever else they resemble.
MIN_PAIR_SIMILARITY = 0.04


# Between lessons citing one file, a term that every lesson citing it uses (when at least this
# many do) counts this share of its weight: it names the file's subject, not the lesson.
FILE_TOPIC_MIN_LESSONS = 3
FILE_TOPIC_WEIGHT = 0.5
# ...unless most of the memory cites that file: its words then say nothing about the file in particular.
FILE_TOPIC_MAX_SHARE = 0.5

# Weight of a term every lesson uses (smoothed idf is ln((1+n)/(1+df)) + this). Half the usual
# 1.0: in a memory of a few dozen lessons the words all of them use should count for little.
IDF_FLOOR = 0.5
MAX_MEMBERS = 12
# A member whose mean similarity to the rest of its group is below this share of the other
# members' (median) leaves the group: it hangs on one member, as a lesson about the same code
# saying something else does.
LOOSE_MEMBER_RATIO = 0.75
# ...but only when it hangs on one member: its mean similarity to the others, leaving out its
# closest, is under this many times the link threshold. A restatement worded further off than the
# rest is still close to more than one of them.
BEYOND_ONE_FACTOR = 1.5
# In a memory this small, term weights are too coarse to tell a look-alike from a restatement
# worded further off (every word of a three-lesson memory is "common"), so nobody is trimmed.
TRIM_MIN_LESSONS = 20
# A term used by more lessons than this is too common to find pairs through (it still
# counts in the norms, so it weakens similarity rather than strengthening it).
MIN_COMMON_TERM_LIMIT = 50
COMMON_TERM_SHARE = 0.005


@contextmanager
def cyclic_gc_paused():
    """Python's cycle collector paused while detection builds its facts, vectors and pairs.

    They are hundreds of thousands of dicts, tuples and floats in a large memory, none in a reference
    cycle: reference counting frees every one. Left on, the collector walks every object the process
    holds, again and again as they are made, which costs more the larger the process already is (in a
    worker that has just imported a tree, more than detection itself). Collection resumes after, so
    cyclic garbage made meanwhile is only collected later. Another thread's pause overlapping this one
    is harmless: whichever found the collector on turns it back on.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


@dataclass
class LessonFacts:
    """What detection needs to know about one working lesson."""

    id: int
    text_key: str  # content hash of the normalized text
    terms: dict  # stemmed term -> count
    paths: frozenset
    dates: frozenset  # the lesson's date and the dates it was confirmed on
    confirmation_ids: tuple = ()

    @property
    def words(self):
        return frozenset(self.terms)


@dataclass
class Group:
    lesson_ids: list
    dates: set = field(default_factory=set)
    confirmation_ids: list = field(default_factory=list)
    # Lowest similarity between two members (1.0 for a single lesson): how tight the group is.
    cohesion: float = 1.0

    @property
    def distinct_dates(self):
        return len(self.dates)


def common_term_limit(n_lessons):
    return max(MIN_COMMON_TERM_LIMIT, int(n_lessons * COMMON_TERM_SHARE))


def _vectors(lessons):
    """TF-IDF vectors {term: weight} of unit norm, smoothed idf over these lessons.

    Terms used by more than common_term_limit() lessons stay in the norm but are left out of the
    vector: they make a lesson longer without making it like any other.
    """
    df = Counter()
    for facts in lessons:
        df.update(facts.terms.keys())
    n = len(lessons)
    limit = common_term_limit(n)
    log = math.log
    idf = {term: log((1 + n) / (1 + count)) + IDF_FLOOR for term, count in df.items()}
    vectors = []
    for facts in lessons:
        weights = {t: (1.0 + log(c)) * idf[t] if c > 1 else idf[t] for t, c in facts.terms.items()}
        norm = math.sqrt(sum(w * w for w in weights.values())) or 1.0
        vectors.append({t: w / norm for t, w in weights.items() if df[t] <= limit})
    return vectors, df


def _pair_dots(terms, positions, weights, n):
    """(pair keys i * n + j in ascending order, their dot products) of the lessons sharing a term.

    The postings come as three columns, one entry per (lesson, indexed term), lessons in position
    order: the term's number (terms numbered as first met), the lesson's position, its weight. Each
    pair of entries of one term adds wi * wj to the pair's dot, term after term in that numbering:
    the sums come out bit for bit as a loop over an inverted index would make them (floating-point
    addition depends on its order, and groups found near a threshold must not move). numpy does it
    in C: the products of all terms of m entries are made together and put in the terms' order, then
    np.bincount adds each pair's products one after another in that order.
    """
    import numpy as np

    terms = np.asarray(terms, dtype=np.int64)
    if not len(terms):
        return np.empty(0, dtype=np.int64), np.empty(0)
    order = np.argsort(terms, kind="stable")  # grouped by term, positions still ascending within one
    positions = np.asarray(positions, dtype=np.int64)[order]
    weights = np.asarray(weights, dtype=np.float64)[order]
    sizes = np.bincount(terms)
    starts = np.cumsum(sizes) - sizes
    pair_counts = sizes * (sizes - 1) // 2
    offsets = np.cumsum(pair_counts) - pair_counts  # where each term's products go, terms in order
    total = int(pair_counts.sum())
    keys = np.empty(total, dtype=np.int64)
    products = np.empty(total, dtype=np.float64)
    for m in np.unique(sizes[sizes > 1]).tolist():
        same_size = np.flatnonzero(sizes == m)
        first, second = np.triu_indices(m, 1)  # row by row: the order a nested loop takes them
        a = starts[same_size][:, None] + first
        b = starts[same_size][:, None] + second
        slots = (offsets[same_size][:, None] + np.arange(len(first))).ravel()
        keys[slots] = (positions[a] * n + positions[b]).ravel()
        products[slots] = (weights[a] * weights[b]).ravel()
    unique, inverse = np.unique(keys, return_inverse=True)
    return unique, np.bincount(inverse, weights=products, minlength=len(unique))


class Similarity:
    """Cosines between a memory's lessons: the pairs sharing an indexed term found at once through
    an inverted index, any other pair computed when clustering asks for it."""

    def __init__(self, lessons):
        self.vectors, df = _vectors(lessons)
        numbers, terms, positions, weights = {}, [], [], []
        for position, vector in enumerate(self.vectors):
            for term, weight in vector.items():
                if df[term] > 1:  # a term of one lesson pairs it with nothing
                    terms.append(numbers.setdefault(term, len(numbers)))
                    positions.append(position)
                    weights.append(weight)
        n = self.n = len(lessons)
        # Pair key = i * n + j (i < j). The pairs found stay in two numpy arrays in key order: clustering
        # asks about a few thousand of the hundreds of thousands found, so only those become Python
        # numbers (self.cache).
        self.keys, self.dots = _pair_dots(terms, positions, weights, n)
        self.cache = {}
        self.threshold = threshold = link_similarity(n)
        strong = self.dots >= threshold
        self.strong = [
            (key // n, key % n, dot) for key, dot in zip(self.keys[strong].tolist(), self.dots[strong].tolist())
        ]
        self.beyond_topic = self._discount_file_topics(lessons)

    def _discount_file_topics(self, lessons):
        """{pair key: cosine} with a file's subject words counting less between lessons citing it.

        Lessons citing one file tend to name its component ("refund", "endpoint", "token" for
        refunds.py) whatever they say about it; two of them sharing only those words are about the
        same code, not the same lesson. A term every lesson citing the file uses (at least
        FILE_TOPIC_MIN_LESSONS of them, at most FILE_TOPIC_MAX_SHARE of the memory) counts
        FILE_TOPIC_WEIGHT of its usual weight between them.
        """
        citing = defaultdict(list)
        for position, facts in enumerate(lessons):
            for path in facts.paths:
                citing[path].append(position)
        discount = 1.0 - FILE_TOPIC_WEIGHT
        n, vectors = self.n, self.vectors
        adjusted = {}
        for positions in citing.values():
            if len(positions) < FILE_TOPIC_MIN_LESSONS or len(positions) > n * FILE_TOPIC_MAX_SHARE:
                continue
            topic = set(vectors[positions[0]])
            for p in positions[1:]:
                topic.intersection_update(vectors[p])
                if not topic:
                    break
            if not topic:
                continue
            for k, p in enumerate(positions):
                for q in positions[k + 1 :]:
                    key = min(p, q) * n + max(p, q)
                    if key not in adjusted:
                        adjusted[key] = set()
                    adjusted[key] |= topic
        result = {}
        for key, terms in adjusted.items():
            p, q = divmod(key, n)
            shared = sum(vectors[p][t] * vectors[q][t] for t in terms)
            result[key] = max(0.0, self(p, q) - discount * shared)
        return result

    def specific(self, p, q):
        """The cosine of two lessons without what their shared file's subject words add (see above)."""
        if p > q:
            p, q = q, p
        return self.beyond_topic.get(p * self.n + q, self(p, q)) if p != q else 1.0

    def __call__(self, p, q):
        if p > q:
            p, q = q, p
        key = p * self.n + q
        dot = self.cache.get(key)
        if dot is None:
            at = int(self.keys.searchsorted(key))
            if at < len(self.keys) and self.keys[at] == key:
                dot = float(self.dots[at])
            else:  # not found through the index: they share no term worth counting
                small, large = sorted((self.vectors[p], self.vectors[q]), key=len)
                dot = sum(w * large.get(t, 0.0) for t, w in small.items())
            self.cache[key] = dot
        return dot


def similarities(lessons, *, minimum=MIN_PAIR_SIMILARITY):
    """{(i, j): cosine} for lesson positions i < j sharing an indexed term, cosine >= `minimum`."""
    sim = Similarity(lessons)
    found = sim.dots >= minimum
    return {(k // sim.n, k % sim.n): d for k, d in zip(sim.keys[found].tolist(), sim.dots[found].tolist())}


def _linkage(left, right, sim):
    """Mean similarity across the two clusters, or None when some pair is unrelated."""
    total = 0.0
    for p in left:
        for q in right:
            score = sim(p, q)
            if score < MIN_PAIR_SIMILARITY:
                return None
            total += score
    return total / (len(left) * len(right))


def _every_member_belongs(members, sim, threshold):
    """Each member's mean similarity to the others reaches the threshold: no member hangs on by one link."""
    for p in members:
        total = sum(sim(p, q) for q in members if q != p)
        if total / (len(members) - 1) < threshold:
            return False
    return True


def average_linkage(sim, *, threshold=None, max_members=MAX_MEMBERS):
    """Clusters of the lessons behind `sim` (a Similarity), closest pair of clusters first.

    Two clusters merge when no pair across them is unrelated (below MIN_PAIR_SIMILARITY), their
    mean similarity reaches `threshold`, every member of the result is that close to the rest of it
    on average, and the result has at most `max_members`. Returns [(positions, cohesion)] for
    clusters of two or more; cohesion is the mean similarity at the last merge.

    Only clusters joined by a strong pair (>= threshold) can reach that mean. Their best strong
    pair bounds their mean from above, so a pair of clusters is queued under that bound and its
    mean is computed only when it reaches the top of the queue (lazy greedy: same order, far fewer
    means computed).
    """
    n = sim.n
    threshold = sim.threshold if threshold is None else threshold
    members = {i: [i] for i in range(n)}
    cohesion = {}
    owner = list(range(n))
    neighbours = defaultdict(dict)
    heap = []
    for i, j, score in sim.strong:
        neighbours[i][j] = score
        neighbours[j][i] = score
        heap.append((-score, i, j, True))
    heapq.heapify(heap)
    next_id = n
    while heap:
        negative, a, b, exact = heapq.heappop(heap)
        if a not in members or b not in members:
            continue  # one side was merged into another cluster since this pair was queued
        if not exact:
            link = _linkage(members[a], members[b], sim)
            if link is not None and link >= threshold:
                heapq.heappush(heap, (-link, a, b, True))
            continue
        merged = members[a] + members[b]
        if len(merged) > 2 and not _every_member_belongs(merged, sim, threshold):
            continue
        del members[a], members[b]
        cluster = next_id
        next_id += 1
        members[cluster] = merged
        cohesion[cluster] = -negative
        for position in merged:
            owner[position] = cluster
        if len(merged) >= max_members:
            continue
        bounds = {}
        for p in merged:
            for k, score in neighbours[p].items():
                other = owner[k]
                if other != cluster and score > bounds.get(other, 0.0):
                    bounds[other] = score
        for other, bound in bounds.items():
            if len(merged) + len(members[other]) <= max_members:
                heapq.heappush(heap, (-bound, other, cluster, False))
    return [(sorted(ps), cohesion[c]) for c, ps in members.items() if len(ps) > 1]


def trim_loose_members(positions, sim, *, ratio=None):
    """Drop, one at a time, the member far less tied to the group than the others are.

    A lesson that says something else about the same code (a decoy) is usually close to one member
    and loosely tied to the rest, where a restatement is tied to several: the member whose mean
    similarity to the others is below `ratio` times the median of the other members' means, and
    who is not close to them once its closest member is left out, leaves; the rest is checked
    again. Similarities here leave out what a shared file's subject words add (Similarity.specific).
    Returns (positions, mean pairwise similarity) of what remains.
    """
    ratio = LOOSE_MEMBER_RATIO if ratio is None else ratio
    members = list(positions)
    specific = sim.specific
    while len(members) >= 3:
        means = {p: sum(specific(p, q) for q in members if q != p) / (len(members) - 1) for p in members}
        loosest = min(members, key=means.get)
        others = sorted(means[q] for q in members if q != loosest)
        middle = len(others) // 2
        median = others[middle] if len(others) % 2 else (others[middle - 1] + others[middle]) / 2
        if means[loosest] >= ratio * median or _tied_beyond_one(loosest, members, specific, sim):
            break
        members.remove(loosest)
    pairs = len(members) * (len(members) - 1) / 2
    mean = sum(sim(p, q) for k, p in enumerate(members) for q in members[k + 1 :]) / pairs
    return members, mean


def _tied_beyond_one(p, members, specific, sim):
    """Whether `p` is close to the group even without its closest member: then it is a restatement
    that is only worded further off, not a lesson hanging on one member."""
    links = sorted((specific(p, q) for q in members if q != p), reverse=True)[1:]
    return sum(links) / len(links) >= BEYOND_ONE_FACTOR * sim.threshold


def group_of(members, cohesion=1.0):
    """A Group of these LessonFacts: their ids, dates and confirmations."""
    dates, confirmations = set(), []
    for facts in members:
        dates |= facts.dates
        confirmations.extend(facts.confirmation_ids)
    return Group(
        lesson_ids=sorted(f.id for f in members),
        dates=dates,
        confirmation_ids=sorted(confirmations),
        cohesion=round(cohesion, 4),
    )


def find_groups(lessons, *, min_dates):
    """Groups of at least two lessons saying the same thing on >= min_dates dates (their own dates)."""
    lessons = sorted(lessons, key=lambda f: f.id)
    sim = Similarity(lessons)
    clusters = average_linkage(sim)
    if len(lessons) >= TRIM_MIN_LESSONS:
        clusters = [trim_loose_members(positions, sim) for positions, _ in clusters]
    groups = [group_of([lessons[p] for p in positions], cohesion) for positions, cohesion in clusters]
    return sorted((g for g in groups if g.distinct_dates >= min_dates), key=lambda g: g.lesson_ids[0])


def single_lesson_groups(lessons, *, min_dates):
    """One lesson confirmed on enough dates is a group of its own (the same lesson seen again)."""
    return [group_of([f]) for f in lessons if len(f.dates) >= min_dates]


def detect(lessons, *, min_dates):
    """All promotable groups: similar lessons together, or a lone lesson confirmed often enough."""
    lessons = list(lessons)
    groups = find_groups(lessons, min_dates=min_dates)
    grouped = {i for g in groups for i in g.lesson_ids}
    groups += single_lesson_groups([f for f in lessons if f.id not in grouped], min_dates=min_dates)
    groups.sort(key=lambda g: g.lesson_ids[0])
    return groups


def facts_from_rows(rows, paths, confirmations):
    """Build LessonFacts from (id, text, content_hash, lesson_date) rows, {id: [path]} and
    {id: [(confirmation_id, date)]}."""
    analyzer = Analyzer()
    result = []
    for lesson_id, text, text_key, lesson_date in rows:
        confs = confirmations.get(lesson_id, ())
        dates = {lesson_date} | {d for _, d in confs}
        result.append(
            LessonFacts(
                id=lesson_id,
                text_key=text_key,
                terms=Counter(analyzer.terms(text)),
                paths=frozenset(paths.get(lesson_id, ())),
                dates=frozenset(d for d in dates if isinstance(d, date)),
                confirmation_ids=tuple(c for c, _ in confs),
            )
        )
    return result
