"""Refinement pages: runs (list, live detail, run now, revert) and the per-persona prompt editor."""

from django import forms
from django.contrib import messages
from django.core.exceptions import ValidationError
from django.db import transaction
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import HttpResponseClientRedirect

from memory.access import (
    APPROVE,
    PERSONA,
    can,
    get_for_user_or_404,
    memory_for_user_or_404,
    visible_memories,
)
from memory.listing import ListFilters, page_of
from memory.models import REFINEMENT_OP_CAP, RefinementPromptVersion, RefinementRun
from memory.refinement import prompts, selectors
from memory.refinement.scheduling import refinement_start
from memory.refinement.services import (
    MAX_PROMPT_CHARS,
    RefinementBusy,
    refinement_prompt_restore,
    refinement_prompt_save,
    refinement_run_revert,
    refinement_threshold_set,
)
from memory.review_queue import run_mark_looked_at
from memory.roles import approver_required, viewer_required
from memory.services import Actor, RevertError
from memory.web import decide, run_progress
from personas.models import Persona

POLL_SECONDS = 1


RUNS_PER_PAGE = 25
MEMORIES_PER_PAGE = 25


@viewer_required
@require_GET
def run_list(request):
    filters = ListFilters.from_request(request, kinds=RefinementRun.Status.choices, kind_param="status")
    page = page_of(
        request, filters.apply(selectors.runs_for_list(user=request.user), created="started_at"), RUNS_PER_PAGE
    )
    memories = page_of(
        request,
        filters.apply(selectors.memories_for_refinement(user=request.user), memory="", created=None, kind_field=None),
        MEMORIES_PER_PAGE,
        param="mpage",
    )
    counts = selectors.status_counts(user=request.user)
    chips = [
        {
            "value": v,
            "label": label,
            "count": counts.get(v, 0),
            "active": v == filters.kind,
            "query": filters.query_string(status=v),
        }
        for v, label in selectors.STATUS_FILTERS
    ]
    choices = filters.choices() | {"kinds": []}  # the status is chosen by the chips above the runs
    context = {
        "page": page,
        "runs": page.object_list,
        "filters": filters,
        "chips": chips,
        "status": filters.kind,
        "choices": choices,
        "keep": [("status", filters.kind)] if filters.kind else [],
        "runs_query": filters.query_string(mpage=request.GET.get("mpage", "")),
        "memories_page": memories,
        "memories": selectors.with_refinement_counts(memories.object_list),
        "memories_query": filters.query_string(page=request.GET.get("page", "")),
        "can_approve": can(request.user, APPROVE),
        "op_cap": REFINEMENT_OP_CAP,
    }
    template = "memory/refinement/runs.html#runs-table" if request.htmx else "memory/refinement/runs.html"
    return TemplateResponse(request, template, context)


def _run_context(request, run):
    finished = run.status in RefinementRun.FINISHED
    return {
        "run": run,
        "finished": finished,
        "poll_seconds": POLL_SECONDS,
        "operations": selectors.operation_rows(run) if finished else [],
        "timeline": selectors.run_timeline(run) if finished else [],
        "recent": list(run.operations.order_by("-seq")[:5]) if not finished else [],
        "counts": selectors.run_counts(run),
        "can_approve": can(request.user, APPROVE, run.memory),
        "can_revert": finished and run.status == RefinementRun.Status.COMPLETED and run.batch_id is not None,
        "needs_look": finished
        and run.looked_at is None
        and run.status in (RefinementRun.Status.TERMINATED, RefinementRun.Status.FAILED)
        and selectors.runs_needing_a_look().filter(pk=run.pk).exists(),
        "gauge_width": max(0, min(100, round(run.retention * 100, 1))),
        "ops_width": round(100 * min(run.ops_used, run.op_cap) / (run.op_cap or 1)),
    }


@viewer_required
@require_GET
def run_detail(request, pk):
    run = get_for_user_or_404(
        request.user,
        RefinementRun.objects.select_related(
            "memory__persona", "memory__project", "batch", "prompt_version", "requested_by"
        ),
        pk=pk,
    )
    context = _run_context(request, run)
    return run_progress(request, "memory/refinement/run_detail.html", context, finished=context["finished"])


@approver_required
@require_POST
def run_start(request, memory_pk):
    memory = memory_for_user_or_404(request.user, pk=memory_pk, action=APPROVE)
    if memory.persona.archived_at or not memory.persona.is_active:
        messages.error(request, f"{memory.persona.name} is archived or inactive; refinement does not run for it.")
        return redirect("refinement:runs")
    try:
        with transaction.atomic():
            run = refinement_start(memory=memory, user=request.user)
    except RefinementBusy as exc:
        messages.error(request, str(exc))
        return redirect("refinement:runs")
    url = reverse("refinement:run", args=[run.pk])
    return HttpResponseClientRedirect(url) if request.htmx else redirect(url)


@approver_required
@require_POST
def run_revert(request, pk):
    run = get_for_user_or_404(request.user, RefinementRun.objects.select_related("batch"), pk=pk, action=APPROVE)
    return decide(
        request,
        lambda: refinement_run_revert(run=run, actor=Actor.for_user(request.user)),
        refused=RevertError,
        then=reverse("refinement:run", args=[run.pk]),
        done=f"Refinement run #{run.pk} was reverted as one change.",
    )


@approver_required
@require_POST
def run_looked_at(request, pk):
    run = get_for_user_or_404(request.user, RefinementRun.objects.all(), pk=pk, action=APPROVE)
    return decide(
        request,
        lambda: run_mark_looked_at(run=run, user=request.user, needing_a_look=selectors.runs_needing_a_look()),
        refused=ValidationError,
        then=reverse("refinement:run", args=[run.pk]),
        done=f"Refinement run #{run.pk} is marked as looked at and left the review queue.",
    )


# --- the prompt -------------------------------------------------------------------------------


class PromptForm(forms.Form):
    text = forms.CharField(
        required=False,
        max_length=MAX_PROMPT_CHARS,
        widget=forms.Textarea(attrs={"rows": 10}),
        label="Guidance for this agent",
        help_text="Leave blank to use the conservative default.",
    )


def _preview_memory(persona, request):
    memories = list(
        visible_memories(request.user).filter(persona=persona).select_related("project").order_by("project__name")
    )
    chosen = request.GET.get("memory") or request.POST.get("memory")
    memory = next((m for m in memories if str(m.pk) == chosen), memories[0] if memories else None)
    return memories, memory


def _prompt_context(request, persona, form, text):
    memories, memory = _preview_memory(persona, request)
    return {
        "persona": persona,
        "form": form,
        "memories": memories,
        "memory": memory,
        "preview": prompts.build_refinement_prompt(persona, memory, guidance=text),
        "uses_default": not (text or "").strip(),
        "default_guidance": prompts.DEFAULT_PERSONA_GUIDANCE,
        "versions": RefinementPromptVersion.objects.filter(persona=persona).select_related("created_by")[:50],
    }


@approver_required
def prompt_edit(request, persona_pk):
    persona = get_for_user_or_404(request.user, Persona.objects.all(), pk=persona_pk, action=APPROVE, via=PERSONA)
    if request.method == "POST":
        form = PromptForm(request.POST)
        if form.is_valid() and "preview" not in request.POST:
            try:
                version = refinement_prompt_save(persona=persona, text=form.cleaned_data["text"], user=request.user)
            except ValidationError as exc:
                form.add_error("text", exc.message_dict.get("text", exc.messages))
            else:
                messages.success(request, f"Saved version {version.number} of {persona.name}'s refinement prompt.")
                return redirect("refinement:prompt", persona_pk=persona.pk)
        text = form.data.get("text", "")
        status = 400 if form.errors else 200
        response = TemplateResponse(
            request, "memory/refinement/prompt.html", _prompt_context(request, persona, form, text), status=status
        )
        return response
    form = PromptForm(initial={"text": persona.refinement_prompt})
    return TemplateResponse(
        request, "memory/refinement/prompt.html", _prompt_context(request, persona, form, persona.refinement_prompt)
    )


@approver_required
@require_POST
def prompt_preview(request, persona_pk):
    persona = get_for_user_or_404(request.user, Persona.objects.all(), pk=persona_pk, action=APPROVE, via=PERSONA)
    text = request.POST.get("text", "")[:MAX_PROMPT_CHARS]
    _memories, memory = _preview_memory(persona, request)
    context = {
        "persona": persona,
        "memory": memory,
        "uses_default": not text.strip(),
        "preview": prompts.build_refinement_prompt(persona, memory, guidance=text),
    }
    return TemplateResponse(request, "memory/refinement/prompt.html#preview", context)


@approver_required
@require_POST
def threshold_set(request, persona_pk):
    persona = get_for_user_or_404(request.user, Persona.objects.all(), pk=persona_pk, action=APPROVE, via=PERSONA)
    try:
        refinement_threshold_set(persona=persona, percent=request.POST.get("threshold", ""))
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
    else:
        messages.success(
            request, f"Runs on {persona.name}'s memories now stop below {persona.refinement_threshold:.0%} retention."
        )
    return redirect("refinement:prompt", persona_pk=persona.pk)


@approver_required
@require_POST
def prompt_restore(request, persona_pk, version_pk):
    version = get_for_user_or_404(
        request.user,
        RefinementPromptVersion.objects.select_related("persona"),
        pk=version_pk,
        persona_id=persona_pk,
        action=APPROVE,
        via="persona__team",
    )
    try:
        new = refinement_prompt_restore(version=version, user=request.user)
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
    else:
        messages.success(request, f"Restored version {version.number} as version {new.number}.")
    return redirect("refinement:prompt", persona_pk=persona_pk)
