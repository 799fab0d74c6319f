"""Home: a lead's review queue and their teams' memories, a page at a time, grouped by team.

Nothing here grows with the organisation: the queue is one counting query, each page reads its own
memories and one aggregate of their lessons, and the team headings come from one grouped count.
"""

from django.core.paginator import Paginator
from django.db.models import Count, Q
from django.template.response import TemplateResponse

from memory.access import visible_memories
from memory.lessons.selectors import HOME_PAGE_SIZE, home_memories, memory_cards
from memory.review_queue import counts_by_source, queue_total, request_totals
from memory.roles import viewer_required
from memory.webhooks.selectors import paused_endpoints_for


def _read_filters(params):
    return {
        "q": (params.get("q") or "").strip()[:100],
        "team": (params.get("team") or "").strip()[:100],
        "waiting": params.get("waiting") == "1",
        "include_archived": params.get("archived") == "1",
    }


def _teams(user):
    """[{id, name, slug, memories, archived}] of the teams whose memories the user sees (one query)."""
    rows = (
        visible_memories(user)
        .order_by()
        .values("project__team_id", "project__team__name", "project__team__slug")
        .annotate(
            memories=Count("id", filter=Q(persona__archived_at__isnull=True)),
            archived=Count("id", filter=Q(persona__archived_at__isnull=False)),
        )
    )
    teams = [
        {
            "id": r["project__team_id"],
            "name": r["project__team__name"] or "No team",
            "slug": r["project__team__slug"] or "none",
            "memories": r["memories"],
            "archived": r["archived"],
        }
        for r in rows
    ]
    return sorted(teams, key=lambda t: (t["id"] is None, t["name"].lower()))


@viewer_required
def home(request):
    filters = _read_filters(request.GET)
    teams = _teams(request.user)
    memories = home_memories(request.user, **filters)
    page = Paginator(memories, HOME_PAGE_SIZE).get_page(request.GET.get("page"))
    shown = list(page.object_list)
    query = request.GET.copy()
    query.pop("page", None)
    context = {
        **filters,
        # The same totals as the nav badge, so the page and the badge cannot disagree.
        "queue": queue_total(request_totals(request)),
        "teams": teams,
        # A one-team install has no teams at all: no headings, nothing new to read.
        "show_teams": any(t["id"] is not None for t in teams),
        "memory_count": sum(t["memories"] for t in teams)
        + (sum(t["archived"] for t in teams) if filters["include_archived"] else 0),
        "archived_count": sum(t["archived"] for t in teams),
        "page": page,
        "cards": memory_cards(shown, counts_by_source([m.pk for m in shown]) if shown else {}),
        "filtered": bool(filters["q"] or filters["team"] or filters["waiting"]),
        "query_string": query.urlencode(),
        # Endpoints that stopped sending after failing again and again, for whoever may resume them.
        "paused_endpoints": [] if request.htmx else paused_endpoints_for(request.user),
    }
    template = "memory/lessons/home.html" + ("#memory-list" if request.htmx else "")
    return TemplateResponse(request, template, context)
