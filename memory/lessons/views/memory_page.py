from django.core.paginator import Paginator
from django.template.response import TemplateResponse

from memory.lessons.addressing import resolve_memory
from memory.lessons.selectors import STATUS_CHOICES, budget_state, lesson_queryset
from memory.models import ALL_CATEGORIES, LessonStatus, Relevance, Tier
from memory.pipeline.coverage import coverage_counts, coverage_tag
from memory.refs.selectors import ref_permalink, refs_panel
from memory.review_queue import memory_queue
from memory.roles import viewer_required
from memory.sync.selectors import folder_sync_state

PAGE_SIZE = 50
FILTERS = ("tier", "category", "relevance", "status", "q", "path", "refs")


def read_filters(params):
    filters = {key: (params.get(key) or "").strip() for key in FILTERS}
    if filters["tier"] not in ("", *Tier.values):
        filters["tier"] = ""
    if filters["category"] not in ("", "none", *ALL_CATEGORIES):
        filters["category"] = ""
    if filters["relevance"] not in ("", *Relevance.values):
        filters["relevance"] = ""
    if filters["status"] not in dict(STATUS_CHOICES):
        filters["status"] = "active"
    if filters["refs"] not in ("", "review"):
        filters["refs"] = ""
    filters["q"] = filters["q"][:200]
    filters["path"] = filters["path"][:500]
    return filters


def lesson_rows(memory, lessons, budget):
    """Rows for the lesson partial: permalinks, whether the budget keeps it, budget markers."""
    cut = budget.cut_ids
    rows, previous_in_prompt = [], {}
    for lesson in lessons:
        refs = [(ref, ref_permalink(memory.project, ref)) for ref in lesson.refs.all()]
        # An expired lesson is out of the prompt by its date, not by the budget: no budget marker for it.
        active = lesson.status == LessonStatus.ACTIVE and not lesson.is_expired
        in_prompt = active and lesson.pk not in cut
        marker = ""
        if active:
            before = previous_in_prompt.get(lesson.tier)
            if before is True and not in_prompt:
                marker = "cut-start"
            elif before is False and in_prompt:
                marker = "cut-end"
            previous_in_prompt[lesson.tier] = in_prompt
        rows.append(
            {
                "lesson": lesson,
                "refs": refs,
                "active": lesson.status == LessonStatus.ACTIVE,
                "cut": active and not in_prompt,
                "marker": marker,
            }
        )
    return rows


def add_coverage(memory, rows):
    """Coverage (uncited / cited / reinforced) on the rows of active working lessons: two queries."""
    ids = [r["lesson"].pk for r in rows if r["lesson"].tier == Tier.WORKING and r["active"]]
    counts = coverage_counts(memory, ids) if ids else {}
    for row in rows:
        if row["lesson"].pk in ids:
            n = counts.get(row["lesson"].pk, 0)
            row["coverage"] = {"tag": coverage_tag(n), "count": n}


def group_by_tier(rows):
    groups = []
    for tier, label in ((Tier.CORE, "Core Lessons"), (Tier.WORKING, "Working Memory")):
        tier_rows = [r for r in rows if r["lesson"].tier == tier]
        if tier_rows:
            groups.append({"tier": tier, "label": label, "rows": tier_rows})
    return groups


@viewer_required
def memory_detail(request, **address):
    memory, moved = resolve_memory(request, "lessons", **address)
    if moved:
        return moved
    filters = read_filters(request.GET)
    page = Paginator(lesson_queryset(memory, **filters), PAGE_SIZE).get_page(request.GET.get("page"))
    budget = budget_state(memory)
    query = request.GET.copy()
    query.pop("page", None)
    rows = lesson_rows(memory, page.object_list, budget)
    add_coverage(memory, rows)
    context = {
        "memory": memory,
        "filters": filters,
        "filtered": any(v for k, v in filters.items() if k != "status") or filters["status"] != "active",
        "page": page,
        "groups": group_by_tier(rows),
        "cut_count": len(budget.cut_ids),
        "core_usage": budget.core,
        "working_usage": budget.working,
        "categories": ALL_CATEGORIES,
        "relevances": Relevance.choices,
        "statuses": STATUS_CHOICES,
        "query_string": query.urlencode(),
        "refs_panel": refs_panel(memory),
    }
    if not (request.htmx and request.htmx.target == "lesson-list"):
        context["review_queue"] = memory_queue(memory)
        context["folder_sync"] = folder_sync_state(memory)
    template = "memory/lessons/memory_detail.html"
    if request.htmx and request.htmx.target == "lesson-list":
        template += "#lesson-list"
    return TemplateResponse(request, template, context)
