"""The offline conflict detector: explicit disagreements between two lessons on the same subject.

Pure functions over light lessons (anything with id, text, lesson_date, tier): the product and the
evaluation run the same code. Precision comes first: two lessons are compared only when they share
enough significant words, one of them among the rarest words of one of the two (Neighbours; after
a batch, the service reads only the batch's candidates, so a batch costs what its neighbours cost,
not the whole memory), and a conflict is flagged only when one of the rules below sees the two
lessons give different values to the same thing:

- alternatives: both name a different member of one family of tools (npm / pnpm / yarn …);
- numbers and versions: the same counted thing (“capped at 3” / “now 5”, “Node 18” / “Node 20”);
- paths: the same file name at different paths, or the same subject at different paths;
- polarity: always / never, do / don't (English, German, Spanish);
- reversed decisions: “use X” against “stop using X”, “no longer”, “moved to”, “replaced by”.

Direction: the lesson with the later date supersedes the other. On the same date, the lesson that
says it changed something (“now”, “no longer”, “moved to”) is the newer; otherwise they contradict.
"""

import heapq
import math
import re
from collections import Counter, defaultdict
from dataclasses import dataclass
from itertools import pairwise

from memory.conflicts.lexicon import (
    ALTERNATIVES,
    ALWAYS_WORDS,
    CHANGE_MARKERS,
    NEGATIONS,
    NEVER_WORDS,
    STOP_USING,
    STOPWORDS,
)

ENGINE = "offline"
# Names whose bare number is a version ("Node 20"); any other name needs a dotted number or a "v".
RUNTIMES = frozenset(
    [
        "node",
        "nodejs",
        "python",
        "java",
        "jdk",
        "ruby",
        "go",
        "golang",
        "php",
        "django",
        "rails",
        "react",
        "angular",
        "vue",
        "next",
        "nextjs",
        "deno",
        "bun",
        "postgres",
        "postgresql",
        "mysql",
        "redis",
        "ubuntu",
        "debian",
        "alpine",
        "kubernetes",
        "terraform",
        "typescript",
        "dotnet",
        "kotlin",
        "swift",
        "gradle",
        "electron",
        "npm",
        "pnpm",
        "yarn",
    ]
)
# Words after a number that make it a count ("3 times", "5 MB"), a value however it is introduced.
COUNTED = frozenset(
    [
        "times",
        "attempts",
        "tries",
        "retries",
        "items",
        "rows",
        "requests",
        "calls",
        "minutes",
        "min",
        "seconds",
        "sec",
        "s",
        "ms",
        "hours",
        "h",
        "days",
        "weeks",
        "mb",
        "gb",
        "kb",
        "px",
        "%",
        "veces",
        "intentos",
        "minutos",
        "segundos",
        "horas",
        "días",
        "mal",
        "versuche",
        "minuten",
        "sekunden",
        "stunden",
        "tage",
    ]
)
# Words after which a number is a value ("capped at 3", "ist jetzt 8", "limitados a 3"), not a name.
VALUE_LEADS = (
    STOPWORDS
    | CHANGE_MARKERS
    | frozenset(
        [
            "=",
            ":",
            "max",
            "maximum",
            "min",
            "minimum",
            "limit",
            "capped",
            "cap",
            "limited",
            "keep",
            "set",
            "begrenzt",
            "limitados",
            "limitado",
        ]
    )
)
# A pair is compared when it shares at least this many significant words …
MIN_SHARED = 2
# … and at least this share (of the shorter lesson's significant words) for the softer rules.
MIN_OVERLAP = 0.5
# A word in more than this many lessons of the memory is too common to look for neighbours
# through; it still counts among the words two lessons share once a rarer one brought them together.
MAX_POSTINGS = 200
# Each lesson is compared with at most this many neighbours: those sharing the rarest words.
MAX_NEIGHBOURS = 50

WORD = re.compile(r"[\w.+#/-]+", re.UNICODE)
NUMBER = re.compile(r"(?<![\w.])(\d+(?:[.,]\d+)*)(?:\s*(%|ms|s|sec|seconds|min|minutes|h|hours|mb|gb|kb|x))?\b", re.I)
PATH = re.compile(r"(?<![\w/])((?:[\w.-]+/)+[\w.-]+|[\w-]+\.(?:py|js|ts|tsx|json|toml|yaml|yml|md|cfg|ini|sh|txt))\b")
VERSIONED = re.compile(r"\b([a-z][\w+-]*)[\s@v]*?(?:\s+v?|@v?|\s*v)(\d+(?:\.\d+){0,2})\b", re.I)


def _norm(word):
    return word.strip(".,;:!?()[]'\"`").lower()


def words(text):
    return [w for w in (_norm(w) for w in WORD.findall(text)) if w]


def significant(text):
    """The words that say what a lesson is about: no stopwords, no numbers, no change words."""
    return set(significant_words(text))


def significant_words(text):
    """{significant term: the word of the text it was made from}, the first such word."""
    out: dict[str, str] = {}
    for w in words(text):
        if w in STOPWORDS or w in CHANGE_MARKERS or len(w) < 3 or w.replace(".", "").replace(",", "").isdigit():
            continue
        out.setdefault(w if w in ALTERNATIVES else _stem(w), w)
        if "/" in w:
            name = w.rsplit("/", 1)[-1]  # a file moved to another folder keeps its name
            out.setdefault(name, name)
    return out


def _stem(word):
    """A light stem, enough for "schedule" / "scheduled" / "scheduling" to meet."""
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix) and not word.endswith("ss"):
            return word[: -len(suffix)]
    return word


@dataclass(frozen=True)
class Finding:
    older_id: int
    newer_id: int
    relation: str  # supersedes | contradicts
    evidence: str


def _negated(tokens, i, window=3):
    return any(t in NEGATIONS for t in tokens[max(0, i - window) : i])


def _asserted_alternatives(text):
    """{family: {member asserted}} and {family: {member named at all}}."""
    tokens = words(text)
    asserted, named = defaultdict(set), defaultdict(set)
    for i, tok in enumerate(tokens):
        family = ALTERNATIVES.get(tok)
        if family is None:
            continue
        named[family].add(tok)
        stop = any(" ".join(tokens[max(0, i - n) : i]).endswith(p) for p in STOP_USING for n in (1, 2, 3))
        if not _negated(tokens, i) and not stop:
            asserted[family].add(tok)
    return asserted, named


def _rule_alternatives(a, b):
    asserted_a, named_a = _asserted_alternatives(a)
    asserted_b, named_b = _asserted_alternatives(b)
    for family in asserted_a.keys() & asserted_b.keys():
        only_a, only_b = asserted_a[family] - asserted_b[family], asserted_b[family] - asserted_a[family]
        if only_a and only_b and not (asserted_a[family] & asserted_b[family]):
            return f"{family}: {', '.join(sorted(asserted_a[family]))} vs {', '.join(sorted(asserted_b[family]))}"
    # "use npm" against "npm no longer / use pnpm instead of npm": one asserts what the other rejects.
    for family in named_a.keys() & named_b.keys():
        rejected_b = named_b[family] - asserted_b[family]
        rejected_a = named_a[family] - asserted_a[family]
        if asserted_a.get(family, set()) & rejected_b and asserted_b.get(family):
            return f"{family}: {', '.join(sorted(asserted_a[family]))} vs {', '.join(sorted(asserted_b[family]))}"
        if asserted_b.get(family, set()) & rejected_a and asserted_a.get(family):
            return f"{family}: {', '.join(sorted(asserted_a[family]))} vs {', '.join(sorted(asserted_b[family]))}"
    return ""


def _numbers(text):
    found = []
    for m in NUMBER.finditer(text):
        value = m.group(1).replace(",", ".")
        if re.fullmatch(r"\d{4}", value) and 1990 < int(value) < 2100:
            continue  # a year
        before = text[: m.start()]
        if re.search(r"(#|PR\s*|issue\s*|v)$", before, re.I):
            continue  # an issue number or a version, counted elsewhere
        previous = words(before[-40:])[-1:] or [""]
        following = (words(text[m.end() :])[:1] or [""])[0]
        if previous[0] and previous[0] not in VALUE_LEADS and not m.group(2) and following not in COUNTED:
            continue  # "queue 2", "step 3": a name, not a value
        found.append((value, (m.group(2) or "").lower()))
    return found


def _versions(text):
    out: dict[str, str] = {}
    for m in VERSIONED.finditer(text):
        name = m.group(1).lower()
        if name in STOPWORDS or name.isdigit():
            continue
        if (
            "." not in m.group(2)
            and name not in RUNTIMES
            and not re.search(r"[@v]\s*$", m.group(0)[: -len(m.group(2))])
        ):
            continue  # "queue 2" names a queue; "Node 20", "v3", "2.3" are versions
        out.setdefault(name, m.group(2))
    return out


def _rule_versions(a, b):
    va, vb = _versions(a), _versions(b)
    for name in va.keys() & vb.keys():
        if va[name] != vb[name] and va[name].split(".")[0] != "0":
            return f"{name} {va[name]} vs {name} {vb[name]}"
    return ""


def _rule_numbers(a, b, overlap):
    if overlap < MIN_OVERLAP:
        return ""
    na, nb = _numbers(a), _numbers(b)
    if len(na) != 1 or len(nb) != 1:
        return ""  # several numbers: which one is the changed one is a guess
    (va, ua), (vb, ub) = na[0], nb[0]
    if va == vb or (ua and ub and ua != ub):
        return ""
    return f"{va}{ua} vs {vb}{ub}"


def _rule_paths(a, b, overlap):
    pa, pb = set(PATH.findall(a)), set(PATH.findall(b))
    if not pa or not pb or pa & pb:
        return ""
    names_a = {p.rsplit("/", 1)[-1] for p in pa}
    names_b = {p.rsplit("/", 1)[-1] for p in pb}
    moved = _has(a, CHANGE_MARKERS) or _has(b, CHANGE_MARKERS)
    if names_a & names_b and len(pa) == 1 and len(pb) == 1:
        return f"{next(iter(pa))} vs {next(iter(pb))}"
    if moved and overlap >= MIN_OVERLAP and len(pa) == 1 and len(pb) == 1:
        return f"{next(iter(pa))} vs {next(iter(pb))}"
    return ""


def _has(text, vocabulary):
    low = " " + " ".join(words(text)) + " "
    return any(f" {v} " in low for v in vocabulary)


def _polarity(text):
    tokens = words(text)
    if any(t in NEVER_WORDS for t in tokens):
        return -1
    if any(t in ALWAYS_WORDS for t in tokens):
        return 1
    if _has(text, STOP_USING):
        return -1
    if any(t in NEGATIONS for t in tokens[:6]):
        return -1
    return 0


def _rule_polarity(a, b, overlap):
    if overlap < 0.6:
        return ""
    pa, pb = _polarity(a), _polarity(b)
    if pa and pb and pa != pb:
        return "always vs never" if {pa, pb} == {1, -1} else ""
    if (pa == -1) != (pb == -1) and _has(a + " " + b, STOP_USING) and overlap >= 0.7:
        return "use vs stop using"
    return ""


def _subject(text, terms=None):
    """The significant words of a lesson other than the values the rules compare, plus the numbers that
    name something ("queue 2") rather than give a value. `terms`: significant(text), when known."""
    terms = significant(text) if terms is None else terms
    plain = {w for w in terms if w not in ALTERNATIVES and "/" not in w and not any(c.isdigit() for c in w)}
    tokens = words(text)
    named = {
        f"{tokens[i - 1]} {tok}"
        for i, tok in enumerate(tokens)
        if i
        and tok.isdigit()
        and tokens[i - 1] not in VALUE_LEADS | RUNTIMES
        and (tokens[i + 1] if i + 1 < len(tokens) else "") not in COUNTED
    }
    return plain | named


def _two_things(sa, sb):
    return bool(sa - sb) and bool(sb - sa)


def different_qualifiers(a, b):
    """Each lesson names something the other does not ("on the small box" / "on the large box",
    "for avatars" / "for attachments"): they speak of two things, so different values may both hold."""
    return _two_things(_subject(a), _subject(b))


def explicit_disagreement(a, b, overlap):
    """Why the texts a and b give different values to the same thing, or "" when they do not."""
    if different_qualifiers(a, b):
        return ""
    versions = _rule_versions(a, b)
    if versions:
        return versions
    if sorted(_numbers(a)) != sorted(_numbers(b)):
        # Numbers differ: the one thing that may differ is that number ("queue 1 … celery" and
        # "queue 2 … dramatiq" speak of two queues).
        if _asserted_alternatives(a)[1] != _asserted_alternatives(b)[1] or set(PATH.findall(a)) != set(PATH.findall(b)):
            return ""  # and something else differs too: two things, not one changed
        return _rule_numbers(a, b, overlap)
    return _rule_alternatives(a, b) or _rule_paths(a, b, overlap) or _rule_polarity(a, b, overlap)


def direction(x, y):
    """(older, newer, relation) for two lessons found in conflict.

    A core lesson's date is the day it was promoted, not the day its content was learned: a core
    lesson dated after a working one is the newer only when it says it changed something."""
    cx, cy = _has(x.text, CHANGE_MARKERS), _has(y.text, CHANGE_MARKERS)
    if x.lesson_date != y.lesson_date:
        older, newer = (x, y) if x.lesson_date < y.lesson_date else (y, x)
        changed = cy if newer is y else cx
        if newer.tier == "core" and older.tier != "core" and not changed:
            return older, newer, "contradicts"
        return older, newer, "supersedes"
    if cx != cy:
        older, newer = (y, x) if cx else (x, y)
        return older, newer, "supersedes"
    older, newer = (x, y) if x.id < y.id else (y, x)
    return older, newer, "contradicts"


def looked_through(terms, holding):
    """The words a lesson looks for its neighbours through: its rarest first (`holding`: {word: lessons
    of the memory holding it}), while those lessons add up to at most MAX_POSTINGS."""
    read, budget = [], MAX_POSTINGS
    for term in sorted(terms, key=lambda t: (holding[t], t)):
        if holding[term] > budget:
            break
        budget -= holding[term]
        read.append(term)
    return read


SIGNATURE_BITS = 512
# Postings read by one numpy sweep of Neighbours.every (bounds its memory to some tens of MB).
_SWEEP = 500_000


def _signature(terms):
    bits = 0
    for term in terms:
        bits |= 1 << (hash(term) % SIGNATURE_BITS)
    return bits


class Neighbours:
    """The lessons of a memory sharing significant words with a lesson, through an inverted index.

    `lessons` are the lessons loaded: every active lesson of the memory in a full pass, or the new
    lessons and their candidate neighbours in an incremental one. Then `frequency` gives, for the
    new lessons' words, how many lessons of the memory hold each (counted by the database, at most
    MAX_POSTINGS + 1) and `total` the memory's size; otherwise both are counted here.
    """

    def __init__(self, lessons, *, frequency=None, total=None):
        self.lessons = {lesson.id: lesson for lesson in lessons}
        self.terms = {lesson.id: significant(lesson.text) for lesson in lessons}
        self.postings = defaultdict(list)
        for lesson_id, terms in self.terms.items():
            for term in terms:
                self.postings[term].append(lesson_id)
        self.frequency = frequency or {}
        self.total = max(total or 0, len(self.lessons))
        self._subjects = {}
        self._signatures = None

    @property
    def signatures(self):
        """Each lesson's words as bits of one number (a word's bit: its hash modulo SIGNATURE_BITS):
        two lessons whose numbers share no bit share no word, found with one `&` instead of a set
        intersection, which is what most of the lessons a rare word reaches come to."""
        if self._signatures is None:
            self._signatures = {lesson_id: _signature(terms) for lesson_id, terms in self.terms.items()}
        return self._signatures

    def subject(self, lesson_id):
        """_subject of the lesson, worked out once: most pairs part on it, each lesson in many pairs."""
        found = self._subjects.get(lesson_id)
        if found is None:
            found = self._subjects[lesson_id] = _subject(self.lessons[lesson_id].text, self.terms[lesson_id])
        return found

    def holding(self, term):
        """Lessons of the memory holding the word, up to MAX_POSTINGS + 1 (more says only "common")."""
        return min(self.frequency.get(term) or len(self.postings.get(term, ())), MAX_POSTINGS + 1)

    def weight(self, term):
        """What sharing the word says about two lessons: its inverse document frequency."""
        return math.log((1 + self.total) / self.holding(term))

    def of(self, lesson_id):
        """{neighbour ids}: the lessons sharing at least MIN_SHARED words with
        this one, at least one of them among the words it looks through, and of those the
        MAX_NEIGHBOURS whose shared words are rarest (by the sum of the words' weights).

        A lesson looks through its rarest words first (the fewest lessons holding them), reading at
        most MAX_POSTINGS lesson ids in all: a word in more lessons than that is never looked through,
        and the work per lesson is bounded whatever the size of the memory."""
        terms = self.terms.get(lesson_id)
        if not terms:
            return {}
        holding = {t: self.holding(t) for t in terms}
        read = looked_through(terms, holding)
        reached: Counter[int] = Counter()
        for term in read:
            reached.update(self.postings[term])
        reached.pop(lesson_id, None)
        unread = _signature(terms.difference(read))
        signatures = self.signatures
        # A lesson reached through one word is a neighbour only if it shares an unread word too.
        return self._rank(lesson_id, {o: n for o, n in reached.items() if n >= MIN_SHARED or signatures[o] & unread})

    def _rank(self, lesson_id, reached):
        """of(lesson_id) among `reached` ({lesson: words read that it holds}): the lessons it reached
        through the words it looks through (or more of those, never fewer: each is checked here)."""
        terms, own = self.terms[lesson_id], self.terms
        ranked = [o for o, n in reached.items() if n >= MIN_SHARED or len(terms & own[o]) >= MIN_SHARED]
        if len(ranked) <= MAX_NEIGHBOURS:
            return set(ranked)
        total = 1 + self.total
        weights = {t: math.log(total / self.holding(t)) for t in terms}
        best = heapq.nsmallest(MAX_NEIGHBOURS, ((-sum(weights[t] for t in terms & own[o]), o) for o in ranked))
        return {other for _, other in best}

    def every(self):
        """{lesson id: of(lesson id)} for every lesson, as `of` finds them, the lessons each reaches
        worked out at once with numpy (a full pass: each word's lessons are read in one sweep)."""
        import numpy as np

        ids = list(self.terms)
        n = len(ids)
        sizes = [len(self.terms[i]) for i in ids]
        if not sum(sizes):
            return {i: {} for i in ids}
        vocabulary = sorted(self.postings)  # numbered in their order: ties broken as looked_through does
        number = {t: k for k, t in enumerate(vocabulary)}
        holding = np.array([self.holding(t) for t in vocabulary], dtype=np.int64)
        lessons = np.repeat(np.arange(n, dtype=np.int64), sizes)
        words = np.fromiter((number[t] for i in ids for t in self.terms[i]), dtype=np.int64, count=len(lessons))
        # Each lesson's words, rarest first; read while the lessons holding them add up to MAX_POSTINGS.
        order = np.lexsort((words, holding[words], lessons))
        by_lesson, their_words = lessons[order], words[order]
        held = holding[their_words]
        running = np.cumsum(held)
        firsts = np.minimum(np.searchsorted(by_lesson, np.arange(n)), len(by_lesson) - 1)
        read = running - (running - held)[firsts][by_lesson] <= MAX_POSTINGS
        # Postings: the lessons of each word, in lesson order.
        counts = np.bincount(words, minlength=len(vocabulary))
        posted = lessons[np.argsort(words, kind="stable")]
        starts = np.cumsum(counts) - counts
        # Signatures (SIGNATURE_BITS bits, as 64-bit columns) of every lesson's words and of its unread words.
        bits = (np.arange(len(vocabulary), dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(
            64 - SIGNATURE_BITS.bit_length() + 1
        )
        columns = SIGNATURE_BITS // 64
        signed = np.zeros((n, columns), dtype=np.uint64)
        np.bitwise_or.at(signed, (lessons, bits[words] >> np.uint64(6)), np.uint64(1) << (bits[words] & np.uint64(63)))
        unread = np.zeros((n, columns), dtype=np.uint64)
        u_lessons, u_words = by_lesson[~read], their_words[~read]
        np.bitwise_or.at(
            unread, (u_lessons, bits[u_words] >> np.uint64(6)), np.uint64(1) << (bits[u_words] & np.uint64(63))
        )
        r_lessons, r_words = by_lesson[read], their_words[read]
        r_counts = counts[r_words]
        reached: dict[int, dict[int, int]] = {i: {} for i in ids}
        sweeps = np.searchsorted(np.cumsum(r_counts), np.arange(0, int(r_counts.sum()), _SWEEP), side="right")
        for lo, hi in pairwise(sorted({0, *sweeps.tolist(), len(r_lessons)})):
            # Whole lessons only: a lesson's pairs are counted within one sweep.
            lo = int(np.searchsorted(r_lessons, r_lessons[lo])) if lo < len(r_lessons) else lo
            hi = int(np.searchsorted(r_lessons, r_lessons[hi])) if hi < len(r_lessons) else hi
            if lo >= hi:
                continue
            x, w = r_lessons[lo:hi], r_words[lo:hi]
            c = counts[w]
            xs = np.repeat(x, c)
            at = np.repeat(starts[w] - (np.cumsum(c) - c), c) + np.arange(int(c.sum()))
            others = posted[at]
            keep = others != xs
            pairs, times = np.unique(xs[keep] * n + others[keep], return_counts=True)
            px, po = pairs // n, pairs % n
            hit = (times >= MIN_SHARED) | (signed[po] & unread[px]).any(axis=1)
            for a, b, t in zip(px[hit].tolist(), po[hit].tolist(), times[hit].tolist()):
                reached[ids[a]][ids[b]] = t
        return {i: self._rank(i, found) for i, found in reached.items()}

    def overlap(self, a, b, shared):
        return shared / max(1, min(len(self.terms[a]), len(self.terms[b])))


def detect(lessons, new_ids=None, *, frequency=None, total=None):
    """[Finding] for the pairs of `lessons` with an explicit disagreement, each pair once.

    new_ids: compare only these lessons with their neighbours (a new batch); None compares all.
    frequency, total: see Neighbours (an incremental pass over a part of the memory)."""
    index = Neighbours(lessons, frequency=frequency, total=total)
    if new_ids is None:
        ids = sorted(index.lessons)
        every = index.every()
        neighbours = every.__getitem__
    else:
        ids = [i for i in new_ids if i in index.lessons]
        neighbours = index.of
    seen, found = set(), []
    for lesson_id in ids:
        for other in sorted(neighbours(lesson_id)):
            pair = (min(lesson_id, other), max(lesson_id, other))
            if pair in seen:
                continue
            seen.add(pair)
            if _two_things(index.subject(pair[0]), index.subject(pair[1])):
                continue  # explicit_disagreement's first test, on the subjects worked out once
            x, y = index.lessons[pair[0]], index.lessons[pair[1]]
            shared = len(index.terms[x.id] & index.terms[y.id])
            why = explicit_disagreement(x.text, y.text, index.overlap(x.id, y.id, shared))
            if why:
                older, newer, relation = direction(x, y)
                found.append(Finding(older.id, newer.id, relation, why))
    return found
