"""Find groups of working lessons that say the same thing.

Two lessons belong together when their normalized text is identical, or when they share at least
three significant words (stop words removed) AND either touch a common file or have mostly the
same significant words. Pairs are found through an inverted index of significant words, so the
cost follows how many lessons share each word, not the square of the number of lessons. Words
that appear in a large share of the memory's lessons carry no theme and are not used to pair.
"""

import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import date

MIN_SHARED_WORDS = 3
# Share of significant words two lessons must have in common when they share no file.
MIN_SIMILARITY = 0.5
# A word used by more lessons than this is too common to mark a theme (see common_word_limit).
MIN_COMMON_WORD_LIMIT = 50
COMMON_WORD_SHARE = 0.02

STOP_WORDS = frozenset(
    """
    a about above after again against all also always am an and any are aren as at be because been before
    being below between both but by can cannot could did didn do does doesn doing don done down during each
    else even ever every few for from further get gets got had has hasn have haven having he her here hers
    him his how however i if in into is isn it its itself just let like made make makes many may me might
    more most much must my need needs never no nor not now of off often on once one only or other our ours
    out over own per rather really same say says see seem seems shall she should shouldn since so some such
    than that the their theirs them then there these they thing things this those though through thus to
    too under until up upon us use used uses using very via was wasn way we well were weren what when where
    whether which while who whom whose why will with within without won would wouldn yes yet you your yours
    e g eg ie etc
    """.split()
)

_WORD = re.compile(r"[a-z][a-z0-9_]+")


def _stem(word):
    # Light plural folding so "tests" and "test" count as one word; nothing cleverer is needed here.
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 4 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def significant_words(text):
    """The words of a lesson that can carry its theme."""
    return frozenset(
        _stem(w) for w in _WORD.findall((text or "").casefold()) if len(w) >= 3 and w not in STOP_WORDS
    )


@dataclass
class LessonFacts:
    """What detection needs to know about one working lesson."""

    id: int
    text_key: str  # content hash of the normalized text
    words: frozenset
    paths: frozenset
    dates: frozenset  # the lesson's date and the dates it was confirmed on
    confirmation_ids: tuple = ()


@dataclass
class Group:
    lesson_ids: list
    dates: set = field(default_factory=set)
    confirmation_ids: list = field(default_factory=list)

    @property
    def distinct_dates(self):
        return len(self.dates)


def common_word_limit(n_lessons):
    return max(MIN_COMMON_WORD_LIMIT, int(n_lessons * COMMON_WORD_SHARE))


class _UnionFind:
    def __init__(self, items):
        self.parent = {i: i for i in items}

    def find(self, x):
        parent = self.parent
        root = x
        while parent[root] != root:
            root = parent[root]
        while parent[x] != root:
            parent[x], x = root, parent[x]
        return root

    def union(self, a, b):
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            # Smaller id as root keeps the result deterministic.
            if rb < ra:
                ra, rb = rb, ra
            self.parent[rb] = ra


def _related(a, b, shared):
    if shared < MIN_SHARED_WORDS:
        return False
    if a.paths & b.paths:
        return True
    union = len(a.words | b.words)
    return union > 0 and shared / union >= MIN_SIMILARITY


def find_groups(lessons, *, min_dates):
    """Groups of at least two lessons whose lessons and confirmations span >= min_dates dates.

    `lessons` is an iterable of LessonFacts. Returns groups sorted by their smallest lesson id.
    """
    lessons = list(lessons)
    by_id = {facts.id: facts for facts in lessons}
    uf = _UnionFind(by_id)

    # Identical text: one representative stands for all its copies in the word comparison.
    representatives = {}
    for facts in lessons:
        first = representatives.setdefault(facts.text_key, facts)
        if first is not facts:
            uf.union(first.id, facts.id)
    reps = list(representatives.values())

    df = Counter()
    for facts in reps:
        df.update(facts.words)
    limit = common_word_limit(len(reps))
    index = defaultdict(list)
    for facts in reps:
        for word in facts.words:
            if df[word] <= limit:
                index[word].append(facts.id)

    for facts in reps:
        shared = Counter()
        for word in facts.words:
            postings = index.get(word)
            if postings:
                shared.update(postings)
        for other_id, count in shared.items():
            if other_id <= facts.id or count < MIN_SHARED_WORDS:
                continue
            if _related(facts, by_id[other_id], count):
                uf.union(facts.id, other_id)

    members = defaultdict(list)
    for facts in lessons:
        members[uf.find(facts.id)].append(facts.id)

    groups = []
    for ids in members.values():
        if len(ids) < 2:
            continue
        ids.sort()
        dates = set()
        confirmations = []
        for lesson_id in ids:
            dates |= by_id[lesson_id].dates
            confirmations.extend(by_id[lesson_id].confirmation_ids)
        if len(dates) >= min_dates:
            groups.append(Group(lesson_ids=ids, dates=dates, confirmation_ids=sorted(confirmations)))
    groups.sort(key=lambda g: g.lesson_ids[0])
    return groups


def single_lesson_groups(lessons, *, min_dates):
    """One lesson confirmed on enough dates is a group of its own (the same lesson seen again)."""
    return [
        Group(lesson_ids=[f.id], dates=set(f.dates), confirmation_ids=sorted(f.confirmation_ids))
        for f in lessons
        if len(f.dates) >= min_dates
    ]


def detect(lessons, *, min_dates):
    """All promotable groups: related lessons together, or a lone lesson confirmed often enough."""
    lessons = list(lessons)
    groups = find_groups(lessons, min_dates=min_dates)
    grouped = {i for g in groups for i in g.lesson_ids}
    groups += single_lesson_groups([f for f in lessons if f.id not in grouped], min_dates=min_dates)
    groups.sort(key=lambda g: g.lesson_ids[0])
    return groups


def facts_from_rows(rows, paths, confirmations):
    """Build LessonFacts from (id, text, content_hash, lesson_date) rows, {id: [path]} and
    {id: [(confirmation_id, date)]}."""
    result = []
    for lesson_id, text, text_key, lesson_date in rows:
        confs = confirmations.get(lesson_id, ())
        dates = {lesson_date} | {d for _, d in confs}
        result.append(
            LessonFacts(
                id=lesson_id,
                text_key=text_key,
                words=significant_words(text),
                paths=frozenset(paths.get(lesson_id, ())),
                dates=frozenset(d for d in dates if isinstance(d, date)),
                confirmation_ids=tuple(c for c, _ in confs),
            )
        )
    return result
