"""File conflicts: the list, and one conflict with both texts and the three ways to settle it."""

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.views.decorators.http import require_POST

from memory.access import CURATE, can, get_for_user_or_404, scope
from memory.roles import curator_required, viewer_required
from memory.sync.models import SyncConflict
from memory.sync.services import sync_conflict_resolve
from memory.web import actor_for


@viewer_required
def conflict_list(request):
    # Two queries: the pending conflicts with their memories, and nothing per row.
    conflicts = (
        scope(SyncConflict.objects.filter(status=SyncConflict.Status.PENDING), request.user)
        .select_related("memory__persona", "memory__project", "folder")
        .order_by("id")[:200]
    )
    return TemplateResponse(request, "memory/sync/conflict_list.html", {"conflicts": conflicts})


@viewer_required
def conflict_detail(request, conflict_id):
    conflict = get_for_user_or_404(
        request.user,
        SyncConflict.objects.select_related("memory__persona", "memory__project", "folder", "lesson", "resolved_by"),
        pk=conflict_id,
    )
    lesson = conflict.lesson
    context = {
        "conflict": conflict,
        "lesson": lesson,
        "lesson_line": _lesson_line(lesson),
        "can_curate": can(request.user, CURATE, conflict.memory),
    }
    return TemplateResponse(request, "memory/sync/conflict_detail.html", context)


@require_POST
@curator_required
def conflict_resolve(request, conflict_id):
    conflict = get_for_user_or_404(
        request.user,
        SyncConflict.objects.select_related("memory__persona", "memory__project"),
        pk=conflict_id,
        action=CURATE,
    )
    try:
        sync_conflict_resolve(conflict=conflict, choice=request.POST.get("choice", ""), actor=actor_for(request))
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
        return redirect(reverse("sync-conflict", args=[conflict.pk]))
    messages.success(request, "Conflict settled; the next sync writes it to the files.")
    return redirect(conflict.memory.get_absolute_url())


def _lesson_line(lesson):
    from memory.formats.lines import lesson_line

    if lesson.status != "active":
        return ""
    return lesson_line(lesson, list(lesson.refs.all()))
