"""The LLM call log: every model call (and offline run) with totals per persona."""

from django import forms
from django.core.paginator import Paginator
from django.template.response import TemplateResponse

from memory.access import persona_call_teams, scope, visible_projects
from memory.engines import calls as selectors
from memory.listing import AGES
from memory.roles import viewer_required
from personas.models import Persona, Project

PAGE_SIZE = 50
# The busiest personas get a row each; the others one row together (filter by persona to see one).
TOTALS_SHOWN = 10


class CallFilterForm(forms.Form):
    persona = forms.ModelChoiceField(
        queryset=Persona.objects.order_by("name").only("id", "name"), required=False, empty_label="All personas"
    )
    project = forms.ModelChoiceField(
        queryset=Project.objects.order_by("name").only("id", "name"), required=False, empty_label="All projects"
    )
    purpose = forms.ChoiceField(required=False)
    outcome = forms.ChoiceField(required=False, choices=[("", "Any outcome"), ("ok", "OK"), ("error", "Error")])
    age = forms.ChoiceField(required=False, choices=AGES)

    def __init__(self, *args, purposes=(), user=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["persona"].queryset = scope(self.fields["persona"].queryset, user, via=persona_call_teams)
        self.fields["project"].queryset = visible_projects(user).order_by("name").only("id", "name")
        self.fields["purpose"].choices = [("", "All purposes")] + [(p, p) for p in purposes]


@viewer_required
def call_list(request):
    purposes = selectors.llm_call_purposes(user=request.user)
    form = CallFilterForm(request.GET or None, purposes=purposes, user=request.user)
    filters = {}
    if form.is_bound and form.is_valid():
        filters = {k: v for k, v in form.cleaned_data.items() if v}
    calls = selectors.llm_calls(user=request.user, **filters)
    totals = selectors.llm_call_totals_per_persona(calls)
    grand_total = selectors.llm_call_grand_total(totals)
    shown_totals, rest = totals[:TOTALS_SHOWN], totals[TOTALS_SHOWN:]
    paginator = Paginator(selectors.llm_call_rows(calls), PAGE_SIZE)
    paginator.count = grand_total["calls"]  # the totals counted the same calls: no second COUNT
    chosen = form.cleaned_data if form.is_bound and form.is_valid() else {}
    context = {
        "form": form,
        # The persona and project options as (id, name) pairs written out by the template: a form widget
        # renders a template per option, which costs more than the rest of the page at a few hundred.
        "persona_options": list(form.fields["persona"].queryset.values_list("pk", "name")),
        "project_options": list(form.fields["project"].queryset.values_list("pk", "name")),
        "chosen_persona": getattr(chosen.get("persona"), "pk", None),
        "chosen_project": getattr(chosen.get("project"), "pk", None),
        "filtered": bool(filters),
        "page": paginator.get_page(request.GET.get("page")),
        "totals": shown_totals,
        "persona_count": len(totals),
        "rest_total": selectors.llm_call_grand_total(rest) | {"personas": len(rest)} if rest else None,
        "grand_total": grand_total,
    }
    template = "memory/engines/calls.html#results" if request.htmx else "memory/engines/calls.html"
    return TemplateResponse(request, template, context)
