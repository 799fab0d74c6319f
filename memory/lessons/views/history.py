"""History per memory and per lesson, and reverting one change or a whole batch."""

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import Http404
from django.core.paginator import Paginator
from django.shortcuts import get_object_or_404, redirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.views.decorators.http import require_POST
from django_htmx.http import HttpResponseClientRedirect

from memory import services
from memory.lessons.selectors import lesson_changes, lesson_with_context, memory_batches
from memory.models import Change, ChangeBatch, Lesson, Memory
from memory.rendering import snapshot_diff
from memory.roles import APPROVE, curator_required, viewer_required
from memory.services import RevertError
from memory.web import actor_for, error_messages, reason_from, safe_next

BATCHES_PER_PAGE = 20
CHANGES_PER_PAGE = 50


def _entry(change):
    return {"change": change, "diff": snapshot_diff(change.before, change.after)}


@viewer_required
def memory_history(request, memory_id):
    memory = get_object_or_404(Memory.objects.select_related("persona", "project"), pk=memory_id)
    page = Paginator(memory_batches(memory), BATCHES_PER_PAGE).get_page(request.GET.get("page"))
    approver = request.user.has_perm(APPROVE)
    # An approver's batch is offered for revert to approvers only (the service refuses the others).
    batches = [{"batch": b, "entries": [_entry(c) for c in b.changes.all()],
                "can_revert": approver or b.kind not in services.APPROVER_BATCH_KINDS} for b in page.object_list]
    context = {"memory": memory, "page": page, "batches": batches}
    template = "memory/lessons/memory_history.html" + ("#history-list" if request.htmx else "")
    return TemplateResponse(request, template, context)


@viewer_required
def lesson_history(request, lesson_id):
    lesson = _get_lesson(lesson_id)
    page = Paginator(lesson_changes(lesson), CHANGES_PER_PAGE).get_page(request.GET.get("page"))
    project = lesson.memory.project
    refs = [(ref, project.permalink(ref.path, ref.start_line, ref.end_line)) for ref in lesson.refs.all()]
    context = {"lesson": lesson, "memory": lesson.memory, "page": page, "refs": refs,
               "entries": [_entry(c) for c in page.object_list]}
    template = "memory/lessons/lesson_history.html" + ("#history-list" if request.htmx else "")
    return TemplateResponse(request, template, context)


def _get_lesson(lesson_id):
    try:
        return lesson_with_context(lesson_id)
    except Lesson.DoesNotExist:
        raise Http404("No such lesson") from None


def _reverted(request, default, error=None, done=""):
    target = safe_next(request, default)
    if request.htmx:
        if error:
            return TemplateResponse(request, "memory/partials/alert.html", {"level": "error", "message": error})
        messages.success(request, done)
        return HttpResponseClientRedirect(target)
    if error:
        messages.error(request, error)
    else:
        messages.success(request, done)
    return redirect(target)


@require_POST
@curator_required
def change_revert(request, change_id):
    change = get_object_or_404(Change, pk=change_id)
    default = reverse("lesson_history", args=[change.lesson_id])
    try:
        services.change_revert(change=change, actor=actor_for(request), reason=reason_from(request))
    except (RevertError, ValidationError) as exc:
        return _reverted(request, default, error=" ".join(error_messages(exc)))
    return _reverted(request, default, done=f"Change #{change.pk} reverted.")


@require_POST
@curator_required
def batch_revert(request, batch_id):
    batch = get_object_or_404(ChangeBatch, pk=batch_id)
    default = reverse("memory_history", args=[batch.memory_id])
    try:
        services.batch_revert(batch=batch, actor=actor_for(request), reason=reason_from(request))
    except (RevertError, ValidationError) as exc:
        return _reverted(request, default, error=" ".join(error_messages(exc)))
    count = batch.changes.count()
    return _reverted(request, default, done=f"{batch.get_kind_display()} #{batch.pk} reverted: "
                     f"{count} change{'s' if count != 1 else ''} undone as one new batch.")
