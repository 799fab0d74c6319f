"""The compactor that needs no model: merge duplicates, then drop the least useful lessons down to the target."""

import re

from rapidfuzz import fuzz

from memory.compaction.draft import Draft, DraftDrop, DraftLine
from memory.models import Relevance, normalize_text

# Two lessons whose normalised words score at least this (0-100, order-insensitive) and that name the
# same numbers, paths and identifiers say the same thing.
NEAR_DUPLICATE_SCORE = 90
DEFAULT_CATEGORY = "OBSERVATION"  # what an untagged (v1) bullet becomes


class _Groups:
    """Union-find over lesson indexes."""

    def __init__(self, size):
        self.parent = list(range(size))

    def find(self, i):
        while self.parent[i] != i:
            self.parent[i] = self.parent[self.parent[i]]
            i = self.parent[i]
        return i

    def union(self, a, b):
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)


_TOKEN = re.compile(r"[\w./#:-]+")


def _specifics(words):
    """Numbers, paths and identifiers: lessons that differ in these are about different things."""
    return frozenset(
        tok.strip(".:-")
        for tok in _TOKEN.findall(words)
        if any(ch.isdigit() for ch in tok) or "/" in tok or "_" in tok or "." in tok.strip(".")
    )


def _same_kind(a, b):
    return a.category == b.category or not a.category or not b.category


def _duplicate_groups(lessons):
    groups = _Groups(len(lessons))
    words = [normalize_text(lesson.text) for lesson in lessons]
    specifics = [_specifics(w) for w in words]
    for i, a in enumerate(lessons):
        for j in range(i + 1, len(lessons)):
            b = lessons[j]
            if not _same_kind(a, b):
                continue
            if a.content_hash == b.content_hash or (
                specifics[i] == specifics[j]
                and fuzz.token_sort_ratio(words[i], words[j], score_cutoff=NEAR_DUPLICATE_SCORE)
            ):
                groups.union(i, j)
    by_root = {}
    for i, lesson in enumerate(lessons):
        by_root.setdefault(groups.find(i), []).append(lesson)
    return list(by_root.values())


def _refs(lesson):
    return [r.as_text() for r in lesson.refs.all()]


def _line_for_group(group):
    if len(group) == 1:
        (lesson,) = group
        return DraftLine(
            category=lesson.category or DEFAULT_CATEGORY, text=lesson.text, refs=_refs(lesson), source_ids=[lesson.pk]
        )
    # The longest wording is usually the most specific one (ties: the tidiest, then the most recent
    # wording); refs of every copy are kept.
    best = max(
        group,
        key=lambda lesson: (
            len(normalize_text(lesson.text)),
            lesson.text[:1].isupper(),
            "  " not in lesson.text,
            lesson.lesson_date,
            lesson.pk,
        ),
    )
    refs = list(dict.fromkeys(ref for lesson in group for ref in _refs(lesson)))
    category = best.category or next((lesson.category for lesson in group if lesson.category), DEFAULT_CATEGORY)
    return DraftLine(category=category, text=best.text, refs=refs, source_ids=sorted(lesson.pk for lesson in group))


def _drop_order(group):
    """Least useful first: lowest relevance, vague before specific, oldest first."""
    return (
        max(Relevance.rank(lesson.relevance) for lesson in group),
        not all(lesson.vague for lesson in group),
        max(lesson.lesson_date for lesson in group),
        min(lesson.pk for lesson in group),
    )


def compact_offline(lessons, target):
    """Draft for `lessons` (active working lessons, refs prefetched) with at most `target` lines."""
    must_keep = [lesson for lesson in lessons if lesson.is_must_keep]
    others = [lesson for lesson in lessons if not lesson.is_must_keep]
    entries = [([lesson], True) for lesson in must_keep] + [(g, False) for g in _duplicate_groups(others)]

    limit = max(target, len(must_keep))  # same rule as draft.effective_target
    droppable = sorted((e for e in entries if not e[1]), key=lambda e: _drop_order(e[0]))
    excess = max(0, len(entries) - limit)
    dropped = droppable[:excess]
    dropped_ids = {id(group) for group, _ in dropped}

    draft = Draft()
    for group, _ in sorted(entries, key=lambda e: min(lesson.pk for lesson in e[0])):
        if id(group) in dropped_ids:
            continue
        draft.lines.append(_line_for_group(group))
    for group, _ in dropped:
        for lesson in group:
            reason = f"Dropped to reach the {limit}-line target: {lesson.get_relevance_display().lower()} relevance"
            if lesson.vague:
                reason += ", vague"
            reason += f", from {lesson.lesson_date.isoformat()}."
            draft.drops.append(DraftDrop(lesson_id=lesson.pk, reason=reason))
    return draft
