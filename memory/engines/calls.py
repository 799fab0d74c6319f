"""Reads over the LLM call log: the filtered list and the totals per persona."""

from django.db.models import Count, Q, Sum
from django.db.models.functions import Coalesce

from memory.access import llm_call_teams, scope
from memory.listing import ListFilters
from memory.models import LLMCall
from personas.models import Persona

_TOTALS = {
    "calls": Count("id"),
    "tokens_in": Coalesce(Sum("tokens_in"), 0),
    "tokens_out": Coalesce(Sum("tokens_out"), 0),
    "errors": Count("id", filter=Q(outcome="error")),
    "latency_sum": Sum("latency_ms"),
    "latency_n": Count("latency_ms"),
}


def llm_calls(*, user, persona=None, project=None, purpose="", outcome="", age=""):
    calls = ListFilters(project=project.pk if project else None, age=age).apply(
        scope(LLMCall.objects.all(), user, via=llm_call_teams)
    )
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
    """One row per persona (None for calls made outside any persona), busiest first: one grouped pass
    over the calls (its columns are all in the llmcall_totals index)."""
    rows = list(calls.order_by().values("persona_id").annotate(**_TOTALS))
    names = dict(
        Persona.objects.filter(pk__in=[r["persona_id"] for r in rows if r["persona_id"]]).values_list("id", "name")
    )
    for row in rows:
        row["persona__name"] = names.get(row["persona_id"])
        row["mean_latency_ms"] = row["latency_sum"] / row["latency_n"] if row["latency_n"] else None
    return sorted(rows, key=lambda r: (-r["calls"], r["persona__name"] or ""))


def llm_call_grand_total(totals):
    """The sum of the rows of llm_call_totals_per_persona (no second pass over the calls)."""
    grand = {
        key: sum(row[key] or 0 for row in totals)
        for key in ("calls", "tokens_in", "tokens_out", "errors", "latency_sum", "latency_n")
    }
    grand["mean_latency_ms"] = grand["latency_sum"] / grand["latency_n"] if grand["latency_n"] else None
    return grand


def llm_call_purposes(*, user):
    return list(
        scope(LLMCall.objects.all(), user, via=llm_call_teams)
        .order_by("purpose")
        .values_list("purpose", flat=True)
        .distinct()
    )
