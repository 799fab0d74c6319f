"""Observation pipeline pages: runs (list and start form) and a run's live progress."""

from django.contrib import messages
from django.shortcuts import get_object_or_404, redirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import HttpResponseClientRedirect

from memory.models import Interaction, Memory, PipelineRun
from memory.pipeline.selectors import relevance_histogram
from memory.pipeline.services import PipelineError, pipeline_start
from memory.roles import APPROVE, approver_required, viewer_required
from memory.services import Actor
from memory.textcheck import bounded_id
from memory.web import run_progress

POLL_SECONDS = 1
PHASES = (("observer", "Observer"), ("reflector", "Reflector"), ("pruner", "Pruner"))


def _memories():
    return list(Memory.objects.select_related("persona", "project").order_by("persona__name", "project__name"))


@viewer_required
@require_GET
def run_list(request):
    memories = _memories()
    chosen = next((m for m in memories if str(m.pk) == request.GET.get("memory", "")), None)
    interactions = []
    if chosen is not None:
        interactions = list(Interaction.objects.filter(memory=chosen).exclude(transcript=[])
                            .order_by("-created_at", "-id")[:20])
    runs = list(PipelineRun.objects.select_related("memory__persona", "memory__project").order_by("-created_at", "-id")[:50])
    context = {"runs": runs, "memories": memories, "chosen": chosen, "interactions": interactions,
               "can_approve": request.user.has_perm(APPROVE)}
    return TemplateResponse(request, "memory/pipeline/runs.html", context)


def _deltas(run):
    parts = []
    if run.reflections_added:
        parts.append(f"R {run.starting_reflections + run.reflections_added}(+{run.reflections_added})")
    if run.reflections_merged:
        parts.append(f"M {run.reflections_merged}")
    if run.observations_dropped:
        parts.append(f"O {run.starting_observations - run.observations_dropped}(−{run.observations_dropped})")
    return " ".join(parts)


def _run_context(run):
    finished = run.status != PipelineRun.Status.RUNNING
    phases = []
    for key, label in PHASES:
        state = "done" if key in run.completed_phases else ("current" if key == run.phase and not finished else "todo")
        phases.append({"key": key, "label": label, "state": state})
    histogram = relevance_histogram(run.memory)
    peak = max([n for _, n in histogram] + [1])
    return {
        "run": run, "finished": finished, "poll_seconds": POLL_SECONDS, "phases": phases, "deltas": _deltas(run),
        "histogram": [{"relevance": r, "count": n, "width": round(100 * n / peak)} for r, n in histogram],
    }


@viewer_required
@require_GET
def run_detail(request, pk):
    run = get_object_or_404(PipelineRun.objects.select_related("memory__persona", "memory__project", "interaction"),
                            pk=pk)
    context = _run_context(run)
    context["can_approve"] = request.user.has_perm(APPROVE)
    return run_progress(request, "memory/pipeline/run_detail.html", context, finished=context["finished"])


@approver_required
@require_POST
def run_start(request, memory_pk):
    memory = get_object_or_404(Memory, pk=memory_pk)
    interaction = None
    raw = request.POST.get("interaction", "").strip()
    if raw:
        interaction = Interaction.objects.filter(memory=memory, pk=bounded_id(raw) or 0).first()
        if interaction is None:
            messages.error(request, "That interaction does not belong to this memory.")
            return redirect(f"{reverse('pipeline:runs')}?memory={memory.pk}")
    try:
        run = pipeline_start(memory=memory, actor=Actor.for_user(request.user), interaction=interaction,
                             transcript_text=request.POST.get("transcript", ""))
    except PipelineError as exc:
        messages.error(request, str(exc))
        return redirect(f"{reverse('pipeline:runs')}?memory={memory.pk}")
    url = reverse("pipeline:run", args=[run.pk])
    return HttpResponseClientRedirect(url) if request.htmx else redirect(url)
