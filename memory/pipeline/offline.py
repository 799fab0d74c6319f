"""Deterministic decisions for the offline engine, one policy per phase.

They go through the same tool handlers as a model's calls, so every rule the handlers enforce
applies to them too.
"""

import re
from datetime import datetime

from django.utils import timezone

from memory.conflicts.lexicon import ENGLISH_STOPWORDS
from memory.engines.base import ToolCall

# The shared English stop words and the words of a conversation with an agent.
STOPWORDS = ENGLISH_STOPWORDS | frozenset(
    [
        "agent",
        "asked",
        "assistant",
        "get",
        "got",
        "let",
        "lets",
        "made",
        "make",
        "need",
        "needs",
        "now",
        "ok",
        "okay",
        "one",
        "please",
        "said",
        "says",
        "thank",
        "thanks",
        "told",
        "tool",
        "two",
        "user",
    ]
)

CRITICAL_RE = re.compile(r"\b(never|always|must not|don't|do not|stop doing|no,)\b", re.I)
HIGH_RE = re.compile(
    r"\b(decided|decision|chose|switch|instead|because|root cause|fails?|failed|error|bug|"
    r"blocker|constraint|completed|resolved|fixed)\b",
    re.I,
)
LOW_RE = re.compile(r"^(ok|okay|thanks|thank you|sure|done|yes|no|got it|great)\W*$", re.I)


def _entry_stamp(entry):
    raw = entry.get("at") or ""
    try:
        return datetime.fromisoformat(raw.strip()).strftime("%Y-%m-%d %H:%M")
    except ValueError:
        return timezone.localtime().strftime("%Y-%m-%d %H:%M")


def rule_relevance(text):
    if CRITICAL_RE.search(text):
        return "critical" if re.search(r"\b(never|always|must not|do not|don't)\b", text, re.I) else "high"
    if HIGH_RE.search(text):
        return "high"
    if len(text) < 40:
        return "low"
    return "medium"


def substantive(entry):
    text = entry["text"].strip()
    return len(text) >= 12 and not LOW_RE.match(text)


def observer_policy(entries):
    """One observation per substantive entry, in one call; then stop."""

    def policy(history):
        if history:
            return []
        observations = []
        for entry in entries:
            if not substantive(entry):
                continue
            text = " ".join(entry["text"].split())
            observations.append(
                {
                    "timestamp": _entry_stamp(entry),
                    "content": text,
                    "relevance": rule_relevance(text),
                    "sourceEntryIds": [entry["id"]],
                }
            )
        if not observations:
            return []
        return [ToolCall("offline-observer-1", "record_observations", {"observations": observations})]

    return policy


def significant_words(text):
    return {w for w in re.findall(r"[a-z][a-z0-9_./-]{3,}", text.lower()) if w not in STOPWORDS}


def reflection_groups(lessons, covered=()):
    """Groups of related observations, found as promotion detection finds its groups (its
    similarity, cap, no chaining and look-alike trim), so a reflection holds what detection would.
    A group a candidate already covers (`covered`: sets of lesson ids) is left out: the inbox has it."""
    from memory.promotions.reflections import ObservationGroups

    by_id = {lesson.pk: lesson for lesson in lessons}
    return [
        [by_id[i] for i in ids]
        for ids in ObservationGroups.of_lessons(lessons).groups()
        if not any(set(ids) <= have for have in covered)
    ]


def reflection_text(group):
    """The group's most relevant observation, said plainly: without a model there is nothing to
    synthesize, and a made-up summary would read as if the engine understood the group."""
    best = max(group, key=lambda lesson: (["low", "medium", "high", "critical"].index(lesson.relevance), lesson.pk))
    return re.sub(r"^(User|Assistant|Tool|System):\s*", "", best.text).strip()[:600]


def reflector_policy(lessons, pass_no, existing, covered=()):
    """Pass 1: one reflection per group of related observations. Pass 2: nothing more offline."""

    def policy(history):
        if history or pass_no != 1:
            return []
        reflections = [
            {"content": reflection_text(g), "supportingObservationIds": [str(lesson.pk) for lesson in g]}
            for g in reflection_groups(lessons, covered)
        ]
        if not reflections:
            return []
        return [ToolCall("offline-reflector-1", "record_reflections", {"reflections": reflections})]

    return policy


def pruner_policy(lessons, coverage, tokens_to_cut, cost):
    """Oldest covered low, then medium observations until the cut is reached; never critical or protected."""

    def policy(history):
        if history:
            return []
        order = {"low": 0, "medium": 1}
        candidates = [
            lesson
            for lesson in lessons
            if lesson.relevance in order and not lesson.protected and coverage.get(lesson.pk, 0) > 0
        ]
        candidates.sort(
            key=lambda lesson: (
                order[lesson.relevance],
                lesson.observed_at or timezone.make_aware(datetime.combine(lesson.lesson_date, datetime.min.time())),
                lesson.pk,
            )
        )
        ids, cut = [], 0
        for lesson in candidates:
            if cut >= tokens_to_cut:
                break
            ids.append(str(lesson.pk))
            cut += cost(lesson)
        if not ids:
            return []
        return [ToolCall("offline-pruner-1", "drop_observations", {"ids": ids})]

    return policy
