"""The conflict review: pending conflicts, one conflict with both lessons side by side, and the decision.

Viewers may read; only approvers decide. Every decision is one batch on the memory's history.
"""

from django.contrib import messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.views.decorators.http import require_POST

from memory.access import APPROVE, can, ensure_visible, get_for_user_or_404, visible_memories, visible_memory_ids
from memory.conflicts import CONFLICT_MARK, selectors
from memory.conflicts.services import (
    conflict_keep_both,
    conflict_keep_newer,
    conflict_keep_older,
    conflicts_bulk_decide,
)
from memory.models import LessonConflict
from memory.roles import approver_required, viewer_required
from memory.services import Actor
from memory.web import bulk_selection, none_to_decide

DECISIONS = {
    "keep_newer": (conflict_keep_newer, "Kept the newer lesson; the older one is superseded by it."),
    "keep_older": (conflict_keep_older, "Kept the older lesson; the newer one is deleted (restorable)."),
    "keep_both": (conflict_keep_both, "Kept both; this pair will not be proposed again."),
}


@viewer_required
def inbox(request):
    conflicts = list(selectors.pending_conflicts(visible_memory_ids(request.user))[: selectors.INBOX_ROWS])
    context = {"conflicts": conflicts, "mark": CONFLICT_MARK, "can_approve": can(request.user, APPROVE)}
    return TemplateResponse(request, "memory/conflicts/inbox.html", context)


@viewer_required
def detail(request, pk):
    ensure_visible(request.user, LessonConflict.objects.all(), pk=pk)
    conflict = selectors.conflict_for_review(pk)
    if conflict is None:
        raise Http404("No such conflict")
    return TemplateResponse(
        request,
        "memory/conflicts/detail.html",
        {"conflict": conflict, "can_approve": can(request.user, APPROVE, conflict.memory)},
    )


@require_POST
@approver_required
def decide(request, pk):
    conflict = get_for_user_or_404(request.user, LessonConflict.objects.select_related("memory"), pk=pk, action=APPROVE)
    choice = DECISIONS.get(request.POST.get("decision", ""))
    if choice is None:
        messages.error(request, "Choose keep the newer, keep the older or keep both.")
        return redirect("conflicts:detail", pk=pk)
    service, done = choice
    kwargs = {} if service is conflict_keep_both else {"reason": request.POST.get("reason", "")}
    try:
        service(conflict=conflict, actor=Actor.for_user(request.user), **kwargs)
    except (ValidationError, PermissionDenied) as exc:
        messages.error(request, f"Not decided: {'; '.join(getattr(exc, 'messages', [str(exc)]))}")
    else:
        messages.success(request, done)
    return redirect("conflicts:detail", pk=pk)


@require_POST
@approver_required
def bulk_decide(request):
    """One decision for the selected conflicts; each lands in its own revertible batch."""
    try:
        ids = bulk_selection(request.POST.getlist("conflict"), noun="conflict")
        conflicts = list(
            LessonConflict.objects.filter(pk__in=ids, memory__in=visible_memories(request.user, APPROVE))
            .select_related("memory")
            .order_by("pk")
        )
        if not conflicts:
            raise none_to_decide(ids, noun="conflict")
        decided, refused = conflicts_bulk_decide(
            conflicts=conflicts,
            decision=request.POST.get("decision", ""),
            actor=Actor.for_user(request.user),
            reason=request.POST.get("reason", ""),
        )
    except ValidationError as exc:
        messages.error(request, f"Nothing decided: {'; '.join(exc.messages)}")
        return redirect("conflicts:inbox")
    messages.success(request, f"Decided {decided} conflict{'s' if decided != 1 else ''}.")
    for refusal in refused:
        messages.warning(request, refusal)
    return redirect("conflicts:inbox")
