"""History per memory and per lesson, and reverting one change or a whole batch."""

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.http import Http404
from django.shortcuts import redirect
from django.template.defaultfilters import pluralize
from django.template.response import TemplateResponse
from django.urls import reverse
from django.views.decorators.http import require_POST
from django_htmx.http import HttpResponseClientRedirect

from memory import services
from memory.access import APPROVE, CURATE, can, ensure_visible, get_for_user_or_404
from memory.lessons.addressing import resolve_memory
from memory.lessons.selectors import change_counts, cited_entries, lesson_changes, lesson_with_context, memory_batches
from memory.models import Change, ChangeBatch, Lesson
from memory.rendering import snapshot_diff
from memory.roles import curator_required, viewer_required
from memory.services import RevertError
from memory.web import actor_for, error_messages, reason_from, safe_next

BATCHES_PER_PAGE = 20
CHANGES_PER_PAGE = 50
CHANGES_PER_BATCH = 20


def _entry(change):
    return {"change": change, "diff": snapshot_diff(change.before, change.after)}


@viewer_required
def memory_history(request, **address):
    memory, moved = resolve_memory(request, "history", **address)
    if moved:
        return moved
    page = Paginator(memory_batches(memory, CHANGES_PER_BATCH), BATCHES_PER_PAGE).get_page(request.GET.get("page"))
    approver = can(request.user, APPROVE, memory)
    counts = change_counts(page.object_list)
    # An approver's batch is offered for revert to approvers only (the service refuses the others). A batch
    # shows its first changes only (an import holds thousands); the count says how many it holds in all.
    batches = [
        {
            "batch": b,
            "entries": [_entry(c) for c in b.first_changes],
            "change_count": counts.get(b.pk, 0),
            "hidden": counts.get(b.pk, 0) - len(b.first_changes),
            "can_revert": approver or b.kind not in services.APPROVER_BATCH_KINDS,
        }
        for b in page.object_list
    ]
    context = {"memory": memory, "page": page, "batches": batches, "may_curate": can(request.user, CURATE, memory)}
    template = "memory/lessons/memory_history.html" + ("#history-list" if request.htmx else "")
    return TemplateResponse(request, template, context)


@viewer_required
def lesson_history(request, lesson_id):
    lesson = _get_lesson(request.user, lesson_id)
    page = Paginator(lesson_changes(lesson), CHANGES_PER_PAGE).get_page(request.GET.get("page"))
    project = lesson.memory.project
    refs = [(ref, project.permalink(ref.path, ref.start_line, ref.end_line)) for ref in lesson.refs.all()]
    context = {
        "lesson": lesson,
        "memory": lesson.memory,
        "page": page,
        "refs": refs,
        "source_entries": cited_entries(lesson),
        "may_curate": can(request.user, CURATE, lesson.memory),
        "entries": [_entry(c) for c in page.object_list],
    }
    template = "memory/lessons/lesson_history.html" + ("#history-list" if request.htmx else "")
    return TemplateResponse(request, template, context)


def _get_lesson(user, lesson_id):
    ensure_visible(user, Lesson.objects.all(), pk=lesson_id)  # another team's lesson: 404
    try:
        return lesson_with_context(lesson_id)
    except Lesson.DoesNotExist:
        raise Http404("No such lesson") from None


def _reverted(request, default, error=None, done="", batch=None):
    """Where a revert answers. A refused single revert offers its whole batch, which may still go back."""
    target = safe_next(request, default)
    offer = batch if error else None
    if request.htmx:
        if error:
            return TemplateResponse(
                request, "memory/partials/revert_refused.html", {"message": error, "batch": offer, "next": target}
            )
        messages.success(request, done)
        return HttpResponseClientRedirect(target)
    if error:
        messages.error(request, error)
        if offer is not None:
            return redirect(reverse("memory_history", args=[offer.memory_id]) + f"#batch-{offer.pk}")
    else:
        messages.success(request, done)
    return redirect(target)


@require_POST
@curator_required
def change_revert(request, change_id):
    change = get_for_user_or_404(request.user, Change.objects.select_related("batch"), pk=change_id, action=CURATE)
    default = reverse("lesson_history", args=[change.lesson_id])
    try:
        revert = services.change_revert(change=change, actor=actor_for(request), reason=reason_from(request))
    except (RevertError, ValidationError) as exc:
        error, batch = " ".join(error_messages(exc)), change.batch
        if services.batch_revertible(batch):
            return _reverted(
                request, default, error=f"{error} The whole {batch} can still be reverted in one go.", batch=batch
            )
        return _reverted(request, default, error=error)
    tied = Change.objects.filter(reverted_by__batch=revert.batch).count() - 1
    done = f"Change #{change.pk} reverted"
    if tied:
        done += (
            f", together with the {tied} change{pluralize(tied)} of {change.batch} that would otherwise "
            "have lost their knowledge"
        )
    return _reverted(request, default, done=done + ".")


@require_POST
@curator_required
def batch_revert(request, batch_id):
    batch = get_for_user_or_404(
        request.user,
        ChangeBatch.objects.select_related("memory__persona", "memory__project"),
        pk=batch_id,
        action=CURATE,
    )
    default = batch.memory.history_url()
    try:
        revert = services.batch_revert(batch=batch, actor=actor_for(request), reason=reason_from(request))
    except (RevertError, ValidationError) as exc:
        return _reverted(request, default, error=" ".join(error_messages(exc)))
    count = Change.objects.filter(reverted_by__batch=revert).count()
    return _reverted(
        request,
        default,
        done=f"{batch.get_kind_display()} #{batch.pk} reverted: "
        f"{count} change{pluralize(count)} undone as one new batch.",
    )
