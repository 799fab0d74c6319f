"""Reads for the refinement pages."""

import difflib
import json
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from django.contrib.auth.models import User
from django.db.models import Count, Max, Q, QuerySet

from memory.access import scope, visible_memories
from memory.models import Lesson, Memory, RefinementOperation, RefinementRun

STATUS_FILTERS = [("", "All"), *RefinementRun.Status.choices]


def runs_needing_a_look() -> QuerySet[RefinementRun]:
    """Rolled-back (terminated) and failed runs waiting in the review queue."""
    from memory.review_queue import runs_needing_a_look as needing

    return needing(
        RefinementRun,
        failed_statuses=[RefinementRun.Status.TERMINATED, RefinementRun.Status.FAILED],
        completed_status=RefinementRun.Status.COMPLETED,
        started_field="started_at",
    )


def runs_for_list(status: str = "", *, user: User) -> QuerySet[RefinementRun]:
    from django.db.models import Exists, OuterRef

    # needs_look: the list says how long each run in the review queue has waited.
    runs = (
        scope(RefinementRun.objects.all(), user)
        .select_related("memory__persona", "memory__project")
        .annotate(needs_look=Exists(runs_needing_a_look().filter(pk=OuterRef("pk"))))
        .order_by("-started_at", "-id")
    )
    if status:
        runs = runs.filter(status=status)
    return runs


def status_counts(*, user: User) -> dict[str, int]:
    rows = scope(RefinementRun.objects.all(), user).values("status").annotate(n=Count("id"))
    counts = {r["status"]: r["n"] for r in rows}
    counts[""] = sum(counts.values())
    return counts


def memories_for_refinement(*, user: User) -> QuerySet[Memory]:
    return (
        visible_memories(user)
        .select_related("persona", "project")
        .filter(persona__archived_at__isnull=True)
        .order_by("persona__name", "project__name", "id")
    )


def with_refinement_counts(memories: Iterable[Memory]) -> list[Memory]:
    """`memories` (one page) each given `core_count`, `running` and `last_run`: grouped over their ids only."""
    memories = list(memories)
    ids = [m.pk for m in memories]
    core: dict[int, int] = dict(
        Lesson.objects.filter(memory_id__in=ids, tier="core", status="active")
        .order_by()
        .values_list("memory_id")
        .annotate(n=Count("id"))
    )
    runs: dict[int, Any] = {
        row["memory_id"]: row
        for row in RefinementRun.objects.filter(memory_id__in=ids)
        .order_by()
        .values("memory_id")
        .annotate(running=Count("id", filter=Q(status="running")), last_run=Max("started_at"))
    }
    for memory in memories:
        memory.core_count = core.get(memory.pk, 0)  # type: ignore[attr-defined]  # set for the page only
        memory.running = runs.get(memory.pk, {}).get("running", 0)  # type: ignore[attr-defined]
        memory.last_run = runs.get(memory.pk, {}).get("last_run")  # type: ignore[attr-defined]
    return memories


def word_diff(before: str | None, after: str | None) -> list[tuple[str, str]]:
    """[(kind, text)] with kind in same/del/ins, word by word; rendered escaped by the template."""
    a, b = (before or "").split(" "), (after or "").split(" ")
    out: list[tuple[str, str]] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if tag == "equal":
            out.append(("same", " ".join(a[i1:i2])))
        if tag in ("delete", "replace"):
            out.append(("del", " ".join(a[i1:i2])))
        if tag in ("insert", "replace"):
            out.append(("ins", " ".join(b[j1:j2])))
    return out


def operation_rows(run: RefinementRun) -> list[dict[str, Any]]:
    """Each operation with per-lesson before/after pairs and a text diff where text changed."""
    rows = []
    for op in run.operations.order_by("seq"):
        before = {str(lesson["id"]): lesson for lesson in op.before or []}
        pairs: list[dict[str, Any]] = []
        for lesson in op.after or []:
            key = str(lesson["id"])
            prior = before.pop(key, None)
            pairs.append(
                {
                    "id": lesson["id"],
                    "before": prior,
                    "after": lesson,
                    "diff": word_diff(prior["text"], lesson["text"])
                    if prior and prior["text"] != lesson["text"]
                    else None,
                    "is_new": prior is None and op.mutating,
                }
            )
        for prior in before.values():
            pairs.append({"id": prior["id"], "before": prior, "after": None, "diff": None, "is_new": False})
        rows.append({"op": op, "pairs": pairs, "args": json.dumps(op.arguments, ensure_ascii=False)})
    return rows


def run_timeline(run: RefinementRun) -> list[dict[str, Any]]:
    """A finished run step by step, with seconds since it started: start, consent, each operation, end.
    Shown the same whether the page watched the run or opened after it ended. One query."""

    def offset(at: datetime | None) -> float | None:
        return (at - run.started_at).total_seconds() if at and run.started_at else None

    steps: list[dict[str, Any]] = [
        {"label": "Started", "offset": 0.0, "detail": f"{run.trigger} run, mass {run.mass_before} tokens"}
    ]
    if run.consent_answer:
        steps.append({"label": "Consent", "offset": None, "detail": run.consent_answer.strip()[:80]})
    for op in run.operations.order_by("seq"):
        detail = op.get_outcome_display()
        if op.retention_after is not None:
            detail += f", retention {op.retention_after:.1%}"
        steps.append({"label": f"#{op.seq} {op.action}", "offset": offset(op.created_at), "detail": detail})
    if run.finished_at:
        steps.append(
            {"label": run.get_status_display(), "offset": offset(run.finished_at), "detail": run.current_action}
        )
    return steps


def run_counts(run: RefinementRun) -> dict[str, int]:
    return run.operations.aggregate(
        refused=Count("id", filter=Q(outcome=RefinementOperation.Outcome.REFUSED)),
        errors=Count("id", filter=Q(outcome=RefinementOperation.Outcome.ERROR)),
        total=Count("id"),
    )
