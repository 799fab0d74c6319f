"""Offline refinement: merge exact and near-exact duplicates only, through the same tool handler.

The policy proposes calls; the session handler decides, so the cap, the protected rule and the
retention breaker apply to the offline path exactly as to a model.
"""

import re

from rapidfuzz import fuzz

from memory.engines.base import ToolCall
from memory.models import LessonStatus, normalize_text

# token_sort_ratio at or above this (0-100) counts as the same lesson worded slightly differently.
NEAR_DUPLICATE_RATIO = 92
_NUMBER = re.compile(r"\d+")


def _numbers(text):
    # Two lessons that differ in a number (a port, a line, a version, a count) are different facts.
    return sorted(_NUMBER.findall(text))


def duplicate_groups(staged_lessons, ratio=NEAR_DUPLICATE_RATIO):
    """Groups (lists of ids, 2+) of active, unprotected lessons that say the same thing."""
    items = [s for s in staged_lessons if s.status == LessonStatus.ACTIVE and not s.protected and isinstance(s.id, int)]
    items.sort(key=lambda s: s.id)
    normal = {s.id: normalize_text(s.text) for s in items}
    parent = {s.id: s.id for s in items}

    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for i, a in enumerate(items):
        for b in items[i + 1 :]:
            na, nb = normal[a.id], normal[b.id]
            if na == nb or (_numbers(na) == _numbers(nb) and fuzz.token_sort_ratio(na, nb) >= ratio):
                parent[find(b.id)] = find(a.id)
    groups = {}
    for s in items:
        groups.setdefault(find(s.id), []).append(s)
    return [g for g in groups.values() if len(g) > 1]


def dedupe_policy(session):
    """An OfflinePolicy: one consolidate per duplicate group, then complete."""
    groups = duplicate_groups(list(session.lessons.values()))
    plan = []
    for group in groups:
        keep = max(group, key=lambda s: (len(s.text), -s.id))
        plan.append(
            ToolCall(
                id=f"offline-{len(plan) + 1}",
                name="consolidate",
                arguments={"ids": [s.id for s in group], "text": keep.text},
            )
        )
    plan.append(
        ToolCall(
            id="offline-complete", name="complete", arguments={"summary": f"merged {len(groups)} duplicate group(s)"}
        )
    )

    def policy(history):
        if history and history[-1][0].name == "complete":
            return []
        step = len(history)
        if step >= len(plan):
            return []
        if history and "cap" in history[-1][1].content and history[-1][1].is_error:
            return [plan[-1]]
        return [plan[step]]

    return policy
