"""The LLM call log: every model call (and offline run) with totals per persona."""

from django import forms
from django.core.paginator import Paginator
from django.template.response import TemplateResponse

from memory.engines import calls as selectors
from memory.access import persona_call_teams, scope, visible_projects
from memory.roles import viewer_required
from memory.listing import AGES
from personas.models import Persona, Project

PAGE_SIZE = 50


class CallFilterForm(forms.Form):
    persona = forms.ModelChoiceField(queryset=Persona.objects.order_by("name").only("id", "name"),
                                     required=False, empty_label="All personas")
    project = forms.ModelChoiceField(queryset=Project.objects.order_by("name").only("id", "name"),
                                     required=False, empty_label="All projects")
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
    page = Paginator(selectors.llm_call_rows(calls), PAGE_SIZE).get_page(request.GET.get("page"))
    context = {
        "form": form,
        "filtered": bool(filters),
        "page": page,
        "totals": selectors.llm_call_totals_per_persona(calls),
        "grand_total": selectors.llm_call_grand_total(calls),
    }
    template = "memory/engines/calls.html#results" if request.htmx else "memory/engines/calls.html"
    return TemplateResponse(request, template, context)
