"""/search/: every lesson the person may see, ranked; filters as a query string, so a search is bookmarkable."""

import html

from django import forms
from django.template.response import TemplateResponse
from django.utils.safestring import mark_safe

from memory.access import visible_memories, visible_projects, visible_teams
from memory.models import ALL_CATEGORIES, LessonStatus, Tier
from memory.roles import viewer_required
from memory.search.selectors import EXPIRED, PAGE_SIZE, Filters, any_filter, search
from memory.search.terms import MAX_QUERY_CHARS
from personas.models import Persona

MAX_PAGE = 500


class OneOf(forms.IntegerField):
    """The id of one of the person's teams, personas or projects. A ChoiceField would normalise its
    hundreds of choices on every request (a few milliseconds of the page); a set answers the same."""

    default_error_messages = {"invalid_choice": "Choose one from the list: %(value)s is not one of them."}

    def __init__(self) -> None:
        super().__init__(required=False)
        self.allowed: frozenset[int] = frozenset()

    def to_python(self, value):
        try:
            return super().to_python(value)
        except forms.ValidationError:
            raise forms.ValidationError(
                self.error_messages["invalid_choice"], params={"value": str(value)[:40]}
            ) from None

    def validate(self, value):
        super().validate(value)
        if value is not None and value not in self.allowed:
            raise forms.ValidationError(self.error_messages["invalid_choice"], params={"value": value})


class SearchForm(forms.Form):
    q = forms.CharField(required=False, strip=True)
    team = OneOf()
    persona = OneOf()
    project = OneOf()
    tier = forms.ChoiceField(required=False, choices=[("", "Any tier"), *Tier.choices])
    category = forms.ChoiceField(required=False, choices=[("", "Any category"), *[(c, c) for c in ALL_CATEGORIES]])
    status = forms.ChoiceField(
        required=False, choices=[("", "Not deleted"), *LessonStatus.choices, (EXPIRED, "Expired (past its date)")]
    )
    since = forms.DateField(required=False, widget=forms.DateInput(attrs={"type": "date"}))
    until = forms.DateField(required=False, widget=forms.DateInput(attrs={"type": "date"}))
    ref = forms.CharField(required=False, max_length=500, strip=True)
    page = forms.IntegerField(required=False, min_value=1, max_value=MAX_PAGE)

    def __init__(self, data, *, teams, personas, projects):
        super().__init__(data)
        for name, choices in (("team", teams), ("persona", personas), ("project", projects)):
            self.fields[name].allowed = frozenset(pk for pk, _ in choices)

    def clean_q(self):
        q = self.cleaned_data["q"]
        if len(q) > MAX_QUERY_CHARS:
            raise forms.ValidationError(f"Search for at most {MAX_QUERY_CHARS:,} characters.")
        if "\x00" in q:
            q = q.replace("\x00", " ")
        return q

    def clean_ref(self):
        ref = self.cleaned_data["ref"]
        if "\x00" in ref:
            raise forms.ValidationError("A path holds no NUL character.")
        return ref

    def clean(self):
        data = super().clean()
        since, until = data.get("since"), data.get("until")
        if since and until and since > until:
            self.add_error("until", "The end date comes before the start date.")
        return data


def _choices(request):
    """The filter choices: teams, personas and projects of the memories the person may see (3 queries)."""
    memories = visible_memories(request.user)
    teams = list(visible_teams(request.user).order_by("name").values_list("pk", "name"))
    personas = Persona.objects.filter(pk__in=memories.values("persona_id")).order_by("name", "pk")
    projects = list(visible_projects(request.user).order_by("name").values_list("pk", "name"))
    return teams, list(personas.values_list("pk", "name")), projects


def _select(form, name, choices, empty):
    """The <select> of a team, persona or project filter. An organisation has hundreds of personas and
    projects: options joined here cost a millisecond, the form widget's per-option templates tens."""
    chosen = str(form.data.get(name, ""))
    invalid = ' aria-invalid="true"' if name in form.errors else ""
    options = "".join(
        f'<option value="{pk}"{" selected" if str(pk) == chosen else ""}>{html.escape(label)}</option>'
        for pk, label in choices
    )
    # Only the names are text from outside, and each went through html.escape (quotes included, as
    # Django's escape, without its lazy-text wrapper on each of hundreds of names); ids are integers.
    return mark_safe(
        f'<select name="{name}" id="id_{name}"{invalid}><option value="">{empty}</option>{options}</select>'
    )


@viewer_required
def search_page(request):
    teams, personas, projects = _choices(request)
    form = SearchForm(request.GET, teams=teams, personas=personas, projects=projects)
    results = None
    if form.is_valid():
        data = form.cleaned_data
        filters = Filters(**{k: data[k] or (None if k in ("team", "persona", "project") else "") for k in FILTER_KEYS})
        filters.since, filters.until = data["since"], data["until"]
        page = data["page"] or 1
        if data["q"] or any_filter(filters):  # the bare page asks for nothing yet
            results = search(request.user, data["q"], filters, page=page)
    else:
        page = 1
    params = request.GET.copy()
    params.pop("page", None)
    context = {
        "form": form,
        "team_select": _select(form, "team", teams, "Any team"),
        "persona_select": _select(form, "persona", personas, "Any persona"),
        "project_select": _select(form, "project", projects, "Any project"),
        "results": results,
        "page": page,
        "has_next": results is not None and results.count > page * PAGE_SIZE and page < MAX_PAGE,
        "first": (page - 1) * PAGE_SIZE + 1,
        "query_string": params.urlencode(),
    }
    return TemplateResponse(request, "memory/search/search.html", context)


FILTER_KEYS = ("team", "persona", "project", "tier", "category", "status", "ref")
