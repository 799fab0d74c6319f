"""List pages at organisation scale: one filter bar (persona, project, kind, age) and windows of a page size.

A list page reads one page of rows, never the whole table: the filters narrow the queryset before the
paginator slices it, and counts come from the database (the paginator's COUNT, grouped aggregates of
the page's own ids), not from rows loaded into Python.
"""

from dataclasses import dataclass, field
from datetime import timedelta
from urllib.parse import urlencode

from django.core.paginator import Paginator
from django.utils import timezone

from memory.access import visible_personas, visible_projects, visible_teams

AGES = [
    ("", "Any age"),
    ("day", "Last 24 hours"),
    ("week", "Last 7 days"),
    ("month", "Last 30 days"),
    ("older", "Older than 30 days"),
]
_AGE_DAYS = {"day": 1, "week": 7, "month": 30}


def _int_or_none(value):
    try:
        number = int(value)
    except (TypeError, ValueError):
        return None
    return number if number > 0 else None


@dataclass
class ListFilters:
    """The filters a list page was asked for, read from its query string (a bad value means no filter)."""

    persona: int | None = None
    project: int | None = None
    kind: str = ""
    age: str = ""
    team: int | None = None
    kinds: list = field(default_factory=list)
    extra: dict = field(default_factory=dict)
    user: object = None  # whose choices the filter bar offers (their teams' personas, projects and teams)

    @classmethod
    def from_request(cls, request, *, kinds=(), kind_param="kind", extra=()):
        """`kinds` is [(value, label)] of the page's own kind (status, purpose…); `extra` more params kept."""
        get = request.GET
        kind = get.get(kind_param, "")
        age = get.get("age", "")
        return cls(
            persona=_int_or_none(get.get("persona")),
            project=_int_or_none(get.get("project")),
            kind=kind if kind in {v for v, _ in kinds} else "",
            age=age if age in _AGE_DAYS or age == "older" else "",
            team=_int_or_none(get.get("team")),
            kinds=list(kinds),
            extra={name: get[name] for name in extra if get.get(name)} | {"_kind_param": kind_param},
            user=request.user,
        )

    @property
    def active(self):
        return bool(self.persona or self.project or self.kind or self.age or self.team)

    def apply(self, queryset, *, memory="memory__", created="created_at", kind_field="status"):
        """`queryset` narrowed by persona, project, kind and age. `memory` is the path to the memory ('' for
        Memory itself); `created` the date the age is measured on; `kind_field` None when kind is not a field."""
        if self.team:
            queryset = queryset.filter(**{f"{memory}project__team_id": self.team})
        if self.persona:
            queryset = queryset.filter(**{f"{memory}persona_id": self.persona})
        if self.project:
            queryset = queryset.filter(**{f"{memory}project_id": self.project})
        if self.kind and kind_field:
            queryset = queryset.filter(**{kind_field: self.kind})
        if self.age and created:
            if self.age == "older":
                queryset = queryset.filter(**{f"{created}__lt": timezone.now() - timedelta(days=30)})
            else:
                queryset = queryset.filter(**{f"{created}__gte": timezone.now() - timedelta(days=_AGE_DAYS[self.age])})
        return queryset

    def query_string(self, **more):
        """The filters as a query string (for page links), with `more` params added and empty ones left out."""
        params = {
            "persona": self.persona or "",
            "project": self.project or "",
            self.extra.get("_kind_param", "kind"): self.kind,
            "age": self.age,
            "team": self.team or "",
        }
        params |= {k: v for k, v in self.extra.items() if not k.startswith("_")}
        params |= more
        return urlencode({k: v for k, v in params.items() if v not in ("", None)})

    def choices(self):
        """Options of the filter bar: the teams, personas and projects the person may see, by name (three
        small queries); no team choice when there is at most one."""
        teams = list(visible_teams(self.user).order_by("name").values_list("pk", "name"))
        return {
            "teams": teams if len(teams) > 1 else [],
            "personas": list(
                visible_personas(self.user).filter(archived_at__isnull=True).order_by("name").values_list("pk", "name")
            ),
            "projects": list(visible_projects(self.user).order_by("name").values_list("pk", "name")),
            "ages": AGES,
            "kinds": self.kinds,
        }


def page_of(request, queryset, per_page, *, param="page"):
    """One page of `queryset`; the paginator's count is the database's COUNT, the rows only the page's."""
    return window(queryset, per_page, request.GET.get(param))


def window(queryset, per_page, number):
    """Page `number` of `queryset`, its rows read in one query that first picks the page's ids.

    The ids come from a subquery that orders and slices `queryset` alone, so the database walks the
    order's index and stops after one page. Selecting the rows with their joined tables and
    annotations in one statement instead lets a planner (SQLite's, with statistics of a large store)
    start from a joined table, compute the annotations for every row and sort them all to keep one page.
    """
    paginator = Paginator(queryset.values_list("pk", flat=True), per_page)
    page = paginator.get_page(number)
    ids = page.object_list  # a sliced subquery, not run on its own
    page.object_list = list(queryset.filter(pk__in=ids)) if paginator.count else []
    return page


class PageCountsAdminMixin:
    """An admin changelist whose per-row counts are grouped over the shown page's ids, after the database
    sorted and sliced the rows: an annotation over the whole table would count every lesson of the store on
    each page view. `page_counts(rows)` sets the counts on the page's objects."""

    list_per_page = 50
    show_full_result_count = False  # no second COUNT(*) over the unfiltered table when a filter is on

    def page_counts(self, rows):
        raise NotImplementedError

    def action_checkbox(self, obj):
        """Django's row checkbox, written out as the same HTML: its widget renders a template for every
        row, which costs more than the rest of the row."""
        from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
        from django.utils.html import format_html
        from django.utils.translation import gettext

        label = format_html(gettext("Select this object for an action - {}"), str(obj))
        return format_html(
            '<input type="checkbox" name="{}" value="{}" class="action-select" aria-label="{}">',
            ACTION_CHECKBOX_NAME,
            str(obj.pk),
            label,
        )

    def get_changelist(self, request, **kwargs):
        base = super().get_changelist(request, **kwargs)
        model_admin = self

        class PageCountsChangeList(base):
            def get_results(self, request):
                super().get_results(request)
                self.result_list = list(self.result_list)
                model_admin.page_counts(self.result_list)

        return PageCountsChangeList

    def get_object(self, request, object_id, from_field=None):
        obj = super().get_object(request, object_id, from_field)
        if obj is not None:
            self.page_counts([obj])  # the change form shows the same counts
        return obj


def grouped_counts(queryset, key, **counts):
    """{key value: {name: count}} of `queryset` grouped by `key`, with `counts` as aggregate expressions."""
    return {row.pop(key): row for row in queryset.order_by().values(key).annotate(**counts)}
