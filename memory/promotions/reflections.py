"""The observation pipeline's reflections, proposed as promotion candidates backed by their observations.

A reflection's observations are grouped exactly as detection groups lessons: detection's similarity
over the memory's working lessons, its cap of MAX_MEMBERS, no member unrelated to another (no
chaining), every member close to the rest on average, and the look-alike trim. The offline reflector
proposes those groups; a model's reflection keeps only the observations that form such a group with
the one it is about; and more support is added to a reflection only when the grown group still
passes the same test. Only the dates rule does not apply: a reflection is not a lesson recurring on
distinct dates.
"""

from collections import defaultdict
from collections.abc import Iterable, Sequence

from django.db import transaction
from django.utils import timezone

from memory.models import Lesson, LessonRef, LessonStatus, Memory, PromotionCandidate, Tier
from memory.promotions import detection, wording
from memory.promotions.candidates import REFLECTOR, from_reflector, insert_candidates, new_candidate
from memory.promotions.text import Analyzer
from memory.refs import parse_ref

Status = PromotionCandidate.Status


class _Within:
    """Detection's similarity seen through some of its lessons (local positions 0..n-1), so its
    clustering runs on them with the memory-wide term weights."""

    def __init__(self, sim: detection.Similarity, positions: Iterable[int]) -> None:
        self.sim, self.positions = sim, list(positions)
        self.n = len(self.positions)
        self.threshold = sim.threshold
        local = {p: k for k, p in enumerate(self.positions)}
        self.strong = sorted(
            (min(local[i], local[j]), max(local[i], local[j]), score)
            for i, j, score in sim.strong
            if i in local and j in local
        )

    def __call__(self, a: int, b: int) -> float:
        return self.sim(self.positions[a], self.positions[b])

    def specific(self, a: int, b: int) -> float:
        return self.sim.specific(self.positions[a], self.positions[b])


class ObservationGroups:
    """A memory's working lessons under detection's similarity: how the reflector groups them."""

    def __init__(self, facts: Iterable[detection.LessonFacts]) -> None:
        self.facts = sorted(facts, key=lambda f: f.id)
        self.position = {f.id: k for k, f in enumerate(self.facts)}
        self.sim = detection.Similarity(self.facts)
        self.trim = len(self.facts) >= detection.TRIM_MIN_LESSONS

    @classmethod
    def of_lessons(cls, lessons: Iterable[Lesson]) -> "ObservationGroups":
        """From Lesson instances (refs prefetched or not)."""
        rows = [(lesson.pk, lesson.text, lesson.content_hash, lesson.lesson_date) for lesson in lessons]
        paths = {lesson.pk: [r.path for r in lesson.refs.all()] for lesson in lessons}
        return cls(detection.facts_from_rows(rows, paths, {}))

    @classmethod
    def of_memory(cls, memory: Memory) -> "ObservationGroups":
        """From the memory's active working lessons, as detection reads them (three queries)."""
        rows = list(
            Lesson.objects.filter(memory=memory, tier=Tier.WORKING, status=LessonStatus.ACTIVE)
            .order_by("id")
            .values_list("id", "text", "content_hash", "lesson_date")
        )
        paths: defaultdict[int, list[str]] = defaultdict(list)
        for lesson_id, path in LessonRef.objects.filter(
            lesson__memory=memory, lesson__tier=Tier.WORKING, lesson__status=LessonStatus.ACTIVE
        ).values_list("lesson_id", "path"):
            paths[lesson_id].append(path)
        return cls(detection.facts_from_rows(rows, paths, {}))

    def _positions(self, ids: Iterable[int]) -> list[int]:
        return sorted({self.position[i] for i in ids if i in self.position})

    def _ids(self, positions: Iterable[int]) -> list[int]:
        return sorted(self.facts[p].id for p in positions)

    def groups(self, ids: Iterable[int] | None = None) -> list[list[int]]:
        """Groups of two or more of these lessons (all when ids is None), as detection builds them:
        average linkage under its guards and cap, then the look-alike trim. Lists of lesson ids."""
        positions = range(len(self.facts)) if ids is None else self._positions(ids)
        within = _Within(self.sim, positions)
        result: list[list[int]] = []
        for local, _ in detection.average_linkage(within):
            if self.trim:
                local, _ = detection.trim_loose_members(local, within)
            members = self._settle([within.positions[k] for k in local])
            if len(members) >= 2:
                result.append(self._ids(members))
        return sorted(result)

    def passes(self, ids: Sequence[int]) -> bool:
        """Detection's membership test: at most MAX_MEMBERS working lessons, no two unrelated, each
        close enough to the rest on average, and none the look-alike trim would take out."""
        positions = self._positions(ids)
        if len(positions) != len(set(ids)) or len(positions) > detection.MAX_MEMBERS:
            return False
        return len(positions) < 2 or self._loosest(positions) is None

    def _loosest(self, positions: list[int]) -> int | None:
        """The member that breaks the test (None when every member belongs)."""
        sim, n = self.sim, len(positions)
        means: dict[int, float] = {}
        for p in positions:
            scores = [sim(p, q) for q in positions if q != p]
            if min(scores) < detection.MIN_PAIR_SIMILARITY:
                return min(positions, key=lambda x: sum(sim(x, q) for q in positions if q != x))
            means[p] = sum(scores) / (n - 1)
        loosest = min(positions, key=lambda p: means[p])
        if means[loosest] < sim.threshold:
            return loosest
        if self.trim and n >= 3:
            within = _Within(sim, positions)
            kept, _ = detection.trim_loose_members(range(n), within)
            if len(kept) < n:
                return next(p for k, p in enumerate(positions) if k not in set(kept))
        return None

    def _settle(self, positions: Iterable[int]) -> list[int]:
        """Take members out, loosest first, until the rest passes the test."""
        positions = sorted(positions)
        while len(positions) > detection.MAX_MEMBERS:
            positions.remove(min(positions, key=lambda x: sum(self.sim(x, q) for q in positions if q != x)))
        while len(positions) >= 2:
            loosest = self._loosest(positions)
            if loosest is None:
                break
            positions.remove(loosest)
        return positions

    def about(self, ids: Iterable[int], text: str) -> int | None:
        """Which of these lessons the text is about: the one whose weighted terms it shares most
        (the first on a tie)."""
        terms = set(Analyzer().terms(text))
        known = [i for i in sorted(set(ids)) if i in self.position]
        if not known:
            return None
        vectors = self.sim.vectors
        return max(known, key=lambda i: (sum(vectors[self.position[i]].get(t, 0.0) for t in terms), -i))

    def fit(self, ids: Iterable[int], text: str) -> list[int]:
        """The observations a reflection with this text keeps: the group among `ids` that holds the
        observation it is about (that one alone when the words put it in no group)."""
        anchor = self.about(ids, text)
        if anchor is None:
            return []
        for group in self.groups(ids):
            if anchor in group:
                return group
        return [anchor]

    def accepts(self, members: Iterable[int], new_id: int) -> bool:
        """Whether a reflection backed by `members` may add `new_id`: the grown group passes the test."""
        return self.passes(sorted(set(members) | {new_id}))


def covered_lesson_sets(memory: Memory) -> list[set[int]]:
    """The lesson ids of every candidate that keeps a group from being proposed again (pending or decided)."""
    from memory.promotions.candidates import COVERING_STATUSES

    return [
        set(evidence.get("lessons", ()))
        for evidence in PromotionCandidate.objects.filter(memory=memory, status__in=COVERING_STATUSES).values_list(
            "evidence", flat=True
        )
    ]


def reflection_propose(
    *,
    memory: Memory,
    text: str,
    category: str,
    lessons: Sequence[Lesson],
    refs: Iterable[str],
    engine: str,
    run_id: int | None,
) -> PromotionCandidate:
    """A pending candidate for a reflection of the observation pipeline, backed by its observations.

    Call inside the pipeline's transaction, with observations that pass ObservationGroups.passes
    (ObservationGroups.fit chooses them). The candidate is labelled as a reflection (evidence source
    and run), so the inbox does not present it as a lesson recurring on distinct dates.
    """
    if len(lessons) > detection.MAX_MEMBERS:
        raise ValueError(f"a reflection is backed by at most {detection.MAX_MEMBERS} observations")
    evidence = {
        "lessons": sorted(lesson.pk for lesson in lessons),
        "confirmations": [],
        "source": REFLECTOR,
        "run": run_id,
    }
    proposal = wording.Proposal(
        text=text, category=category, refs=[parse_ref(r) for r in refs], engine=str(engine)[:40]
    )
    candidate = new_candidate(
        memory,
        proposal,
        evidence,
        [(lesson, ()) for lesson in lessons],
        len({lesson.lesson_date for lesson in lessons}),
        timezone.now(),
        detector=REFLECTOR,
    )
    (created,) = insert_candidates(memory, [candidate], candidate.created_at)
    return created


def reflection_support(
    *, candidate: PromotionCandidate, lessons: Iterable[Lesson], groups: ObservationGroups | None = None
) -> PromotionCandidate:
    """More observations back a pending reflection, each only if the grown group still passes
    detection's membership test (so it never grows past the cap); its evidence, supporting lessons
    and date count follow. A candidate of detection is never changed: its lessons are the group
    detection found. `groups`: an ObservationGroups of the memory (read from it when omitted)."""
    if not from_reflector(candidate) or candidate.status != Status.PENDING:
        return candidate
    have = set(candidate.evidence.get("lessons", []))
    offered = [lesson for lesson in lessons if lesson.pk not in have]
    if not offered:
        return candidate
    groups = groups or ObservationGroups.of_memory(candidate.memory)
    members = sorted(have)
    added: list[Lesson] = []
    for lesson in offered:
        if groups.accepts(members, lesson.pk):
            members = sorted(set(members) | {lesson.pk})
            added.append(lesson)
    if not added:
        return candidate
    candidate.evidence = {**candidate.evidence, "lessons": members}
    candidate.supporting_state = {
        **candidate.supporting_state,
        **{str(lesson.pk): {"hash": lesson.content_hash} for lesson in added},
    }
    candidate.supporting.add(*added)
    candidate.distinct_dates = len(
        set(Lesson.objects.filter(pk__in=candidate.evidence["lessons"]).values_list("lesson_date", flat=True))
    )
    candidate.save(update_fields=["evidence", "supporting_state", "distinct_dates"])
    return candidate


@transaction.atomic
def reflections_reevaluate(*, memory: Memory) -> list[tuple[PromotionCandidate, PromotionCandidate | None]]:
    """Pending reflections that break the grouping rules (more than MAX_MEMBERS observations, or
    observations detection would not put together) are superseded by one backed by only the group
    that holds the observation each is about. Run once by redetect_promotions; a reflection that
    passes is left as it is. Returns [(old, new)]."""
    pending = [
        c
        for c in PromotionCandidate.objects.select_for_update()
        .filter(memory=memory, status=Status.PENDING)
        .order_by("id")
        if from_reflector(c)
    ]
    if not pending:
        return []
    groups = ObservationGroups.of_memory(memory)
    replaced: list[tuple[PromotionCandidate, PromotionCandidate | None]] = []
    now = timezone.now()
    for old in pending:
        ids = old.evidence.get("lessons", [])
        if groups.passes(ids):
            continue
        keep = groups.fit(ids, old.text)
        lessons = list(Lesson.objects.filter(pk__in=keep).prefetch_related("refs").order_by("id"))
        new = None
        if lessons:
            refs = list(dict.fromkeys(r.as_text() for lesson in lessons for r in lesson.refs.all()))
            new = reflection_propose(
                memory=memory,
                text=old.text,
                category=old.category,
                lessons=lessons,
                refs=refs,
                engine=old.engine,
                run_id=old.evidence.get("run"),
            )
        old.status, old.decided_at = Status.SUPERSEDED, now
        old.reason = (
            f"Re-evaluated with detection's grouping: {len(ids) - len(keep)} of its {len(ids)} observations "
            f"are not one group with the rest" + (f"; replaced by candidate #{new.pk}." if new else ".")
        )
        old.save(update_fields=["status", "decided_at", "reason"])
        replaced.append((old, new))
    return replaced
