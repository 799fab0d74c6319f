"""Reads over the LLM call log: the filtered list and the totals per persona."""

from django.db.models import Avg, Count, Q, Sum
from django.db.models.functions import Coalesce

from memory.access import llm_call_teams, scope
from memory.listing import ListFilters
from memory.models import LLMCall

_TOTALS = {
    "calls": Count("id"),
    "tokens_in": Coalesce(Sum("tokens_in"), 0),
    "tokens_out": Coalesce(Sum("tokens_out"), 0),
    "errors": Count("id", filter=Q(outcome="error")),
    "mean_latency_ms": Avg("latency_ms"),
}


def llm_calls(*, user, persona=None, project=None, purpose="", outcome="", age=""):
    calls = ListFilters(project=project.pk if project else None, age=age).apply(
        scope(LLMCall.objects.all(), user, via=llm_call_teams))
    if persona is not None:
        calls = calls.filter(persona=persona)
    if purpose:
        calls = calls.filter(purpose=purpose)
    if outcome:
        calls = calls.filter(outcome=outcome)
    return calls


def llm_call_rows(calls):
    return calls.select_related("persona", "memory__project").order_by("-created_at", "-id")


def llm_call_totals_per_persona(calls):
    """One row per persona (None for calls made outside any persona), busiest first."""
    return list(
        calls.order_by()
        .values("persona_id", "persona__name")
        .annotate(**_TOTALS)
        .order_by("-calls", "persona__name")
    )


def llm_call_grand_total(calls):
    return calls.order_by().aggregate(**_TOTALS)


def llm_call_purposes(*, user):
    return list(scope(LLMCall.objects.all(), user, via=llm_call_teams).order_by("purpose").values_list("purpose", flat=True).distinct())
