"""Observation pipeline pages: runs (list and start form) and a run's live progress."""

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.db.models import Exists, OuterRef
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import HttpResponseClientRedirect

from memory.access import APPROVE, can, get_for_user_or_404, memory_for_user_or_404, scope, visible_memories
from memory.listing import ListFilters, page_of
from memory.models import Interaction, PipelineRun
from memory.pipeline.selectors import relevance_histogram, run_results, runs_needing_a_look
from memory.pipeline.services import PipelineError, pipeline_start
from memory.review_queue import run_mark_looked_at
from memory.roles import approver_required, viewer_required
from memory.services import Actor
from memory.textcheck import bounded_id
from memory.web import decide, run_progress

POLL_SECONDS = 1
PHASES = (("observer", "Observer"), ("reflector", "Reflector"), ("pruner", "Pruner"))


RUNS_PER_PAGE = 25
# The memory picker lists at most this many memories; past it, the persona and project filters narrow it.
MEMORY_CHOICES = 50


@viewer_required
@require_GET
def run_list(request):
    filters = ListFilters.from_request(
        request, kinds=PipelineRun.Status.choices, kind_param="status", extra=("memory",)
    )
    memories = filters.apply(
        visible_memories(request.user).select_related("persona", "project"), memory="", created=None, kind_field=None
    ).order_by("persona__name", "project__name", "id")
    choices = list(memories[: MEMORY_CHOICES + 1])
    chosen_id = bounded_id(request.GET.get("memory", ""))
    chosen = next((m for m in choices if m.pk == chosen_id), None)
    if chosen is None and chosen_id is not None:
        chosen = visible_memories(request.user).select_related("persona", "project").filter(pk=chosen_id).first()
    interactions = []
    if chosen is not None:
        interactions = list(
            Interaction.objects.filter(memory=chosen).exclude(transcript=[]).order_by("-created_at", "-id")[:20]
        )
    # needs_look: the list says how long each run in the review queue has waited.
    runs = filters.apply(
        scope(PipelineRun.objects.all(), request.user)
        .select_related("memory__persona", "memory__project")
        .annotate(needs_look=Exists(runs_needing_a_look().filter(pk=OuterRef("pk"))))
    )
    page = page_of(request, runs.order_by("-created_at", "-id"), RUNS_PER_PAGE)
    context = {
        "page": page,
        "runs": page.object_list,
        "memories": choices[:MEMORY_CHOICES],
        "more_memories": len(choices) > MEMORY_CHOICES,
        "chosen": chosen,
        "interactions": interactions,
        "filters": filters,
        "choices": filters.choices(),
        "query_string": filters.query_string(),
        "can_approve": can(request.user, APPROVE, chosen),
    }
    return TemplateResponse(request, "memory/pipeline/runs.html", context)


def _plural(n, word, words=None):
    return f"{n} {word if n == 1 else (words or word + 's')}"


def _deltas(run):
    """What the run changed, in words: reflections now (new), merged into, observations left (dropped)."""
    parts = []
    if run.reflections_added:
        parts.append(
            f"{_plural(run.starting_reflections + run.reflections_added, 'reflection')} ({run.reflections_added} new)"
        )
    if run.reflections_merged:
        parts.append(f"{_plural(run.reflections_merged, 'reflection')} given more support")
    if run.observations_dropped:
        parts.append(
            f"{_plural(run.starting_observations - run.observations_dropped, 'observation')} left "
            f"({run.observations_dropped} dropped)"
        )
    return " · ".join(parts)


def _pruner_skipped(run, finished):
    """The pruner ran no pass: working memory was within its budget, or a proposal was already waiting."""
    return finished and run.phase == "pruner" and run.max_passes == 0 and "pruner" in run.completed_phases


def _run_context(run):
    finished = run.status != PipelineRun.Status.RUNNING
    skipped = _pruner_skipped(run, finished)
    phases = []
    for key, label in PHASES:
        state = "done" if key in run.completed_phases else ("current" if key == run.phase and not finished else "todo")
        if key == "pruner" and skipped:
            state = "skipped"
        phases.append({"key": key, "label": label, "state": state})
    created = run_results(run) if finished else {"observations": [], "reflections": [], "core": []}
    histogram = relevance_histogram(run.memory)
    peak = max([n for _, n in histogram] + [1])
    return {
        "run": run,
        "finished": finished,
        "poll_seconds": POLL_SECONDS,
        "phases": phases,
        "deltas": _deltas(run),
        "pruner_skipped": skipped,
        **created,
        "reflections_total": len(created["reflections"]) + len(created["core"]),
        "histogram": [{"relevance": r, "count": n, "width": round(100 * n / peak)} for r, n in histogram],
    }


@viewer_required
@require_GET
def run_detail(request, pk):
    run = get_for_user_or_404(
        request.user, PipelineRun.objects.select_related("memory__persona", "memory__project", "interaction"), pk=pk
    )
    context = _run_context(run)
    context["can_approve"] = can(request.user, APPROVE, run.memory)
    context["needs_look"] = (
        run.status == PipelineRun.Status.FAILED
        and run.looked_at is None
        and runs_needing_a_look().filter(pk=run.pk).exists()
    )
    return run_progress(request, "memory/pipeline/run_detail.html", context, finished=context["finished"])


@approver_required
@require_POST
def run_looked_at(request, pk):
    run = get_for_user_or_404(request.user, PipelineRun.objects.all(), pk=pk, action=APPROVE)
    return decide(
        request,
        lambda: run_mark_looked_at(run=run, user=request.user, needing_a_look=runs_needing_a_look()),
        refused=ValidationError,
        then=reverse("pipeline:run", args=[run.pk]),
        done=f"Pipeline run #{run.pk} is marked as looked at and left the review queue.",
    )


@approver_required
@require_POST
def run_start(request, memory_pk):
    memory = memory_for_user_or_404(request.user, pk=memory_pk, action=APPROVE)
    interaction = None
    raw = request.POST.get("interaction", "").strip()
    if raw:
        interaction = Interaction.objects.filter(memory=memory, pk=bounded_id(raw) or 0).first()
        if interaction is None:
            messages.error(request, "That interaction does not belong to this memory.")
            return redirect(f"{reverse('pipeline:runs')}?memory={memory.pk}")
    try:
        run = pipeline_start(
            memory=memory,
            actor=Actor.for_user(request.user),
            interaction=interaction,
            transcript_text=request.POST.get("transcript", ""),
        )
    except PipelineError as exc:
        messages.error(request, str(exc))
        return redirect(f"{reverse('pipeline:runs')}?memory={memory.pk}")
    url = reverse("pipeline:run", args=[run.pk])
    return HttpResponseClientRedirect(url) if request.htmx else redirect(url)
