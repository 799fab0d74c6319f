"""The memory page's ref decisions: check now, accept a move (one or all), drop a ref, retire a lesson.

htmx requests get the lesson row back; plain requests are redirected to where they came from,
with a message, so every action also works without JS.
"""

from django.contrib import messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.shortcuts import redirect
from django.utils import timezone
from django.views.decorators.http import require_POST

from memory.access import CURATE, get_for_user_or_404, memory_for_user_or_404
from memory.lessons.views.lessons import _curate
from memory.models import LessonRef, Memory, RefCheck
from memory.refs import services
from memory.refs.tasks import check_refs
from memory.roles import curator_required
from memory.web import actor_for, error_messages, reason_from, safe_next


def _back_to_memory(request, memory_id):
    memory = Memory.objects.select_related("persona", "project").get(pk=memory_id)
    return redirect(safe_next(request, memory.get_absolute_url()))


@require_POST
@curator_required
def refs_check(request, memory_id):
    """Check the refs of the memory's project now (in-process by default, else on a worker)."""
    memory = memory_for_user_or_404(request.user, pk=memory_id, action=CURATE)
    asked_at = timezone.now()
    check_refs.delay(memory.project_id)  # nothing written here, so nothing to wait for
    check = RefCheck.objects.filter(project_id=memory.project_id, started_at__gte=asked_at).order_by("-id").first()
    if check is None or check.finished_at is None:
        messages.info(request, "Ref check queued; reload the page in a moment.")
    elif check.error:
        messages.error(request, f"Refs could not be checked: {check.error}")
    else:
        review = sum(n for status, n in check.counts.items() if status in ("moved", "changed", "gone"))
        messages.success(
            request,
            f"Checked {check.refs_checked} ref{'s' if check.refs_checked != 1 else ''} "
            f"at {check.head[:10]}: {review} need{'s' if review == 1 else ''} review.",
        )
    return _back_to_memory(request, memory_id)


def _ref_action(request, ref_id, service, done):
    ref = get_for_user_or_404(
        request.user, LessonRef.objects.all(), pk=ref_id, action=CURATE, via="lesson__memory__project__team"
    )
    return _curate(
        request,
        ref.lesson_id,
        lambda lesson: service(ref=ref, actor=actor_for(request), reason=reason_from(request)),
        done,
    )


@require_POST
@curator_required
def ref_accept(request, ref_id):
    return _ref_action(
        request,
        ref_id,
        services.ref_accept_move,
        "Moved ref accepted. The edit is in the lesson's history and can be reverted.",
    )


@require_POST
@curator_required
def ref_drop(request, ref_id):
    return _ref_action(request, ref_id, services.ref_drop, "Ref dropped. The edit can be reverted from history.")


@require_POST
@curator_required
def ref_retire(request, ref_id):
    return _ref_action(
        request, ref_id, services.ref_retire_lesson, "Lesson retired. It stays in history and can be restored."
    )


@require_POST
@curator_required
def refs_accept_moved(request, memory_id):
    memory = memory_for_user_or_404(request.user, pk=memory_id, action=CURATE)
    try:
        batch = services.refs_accept_moved(memory=memory, actor=actor_for(request), reason=reason_from(request))
    except (ValidationError, PermissionDenied) as exc:
        messages.error(request, " ".join(error_messages(exc)))
    else:
        messages.success(request, f"{batch.label}, as one change you can revert from history.")
    return _back_to_memory(request, memory_id)


@require_POST
@curator_required
def refs_bulk(request, memory_id):
    """Drop the selected refs, or retire their lessons; each lesson is its own revertible change."""
    from memory.web import bulk_selection

    memory = memory_for_user_or_404(request.user, pk=memory_id, action=CURATE)
    try:
        ids = bulk_selection(request.POST.getlist("ref"), noun="ref")
        outcome = services.refs_bulk_decide(
            memory=memory,
            ref_ids=ids,
            action=request.POST.get("action", ""),
            actor=actor_for(request),
            reason=reason_from(request),
        )
    except ValidationError as exc:
        messages.error(request, "Nothing was changed: " + " ".join(error_messages(exc)))
    else:
        done = len(outcome["done"])
        if done:
            what = "dropped" if request.POST.get("action") == "drop" else "retired with their lessons"
            messages.success(
                request,
                f"{done} of {len(ids)} ref{'s' if len(ids) != 1 else ''} {what}. "
                "Each lesson's edit is in its history and can be reverted alone.",
            )
        for item in outcome["refused"]:
            messages.warning(request, f"Ref #{item['id']} left as it is: {item['message']}")
    return _back_to_memory(request, memory_id)
