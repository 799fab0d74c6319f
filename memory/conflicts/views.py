"""The conflict review: pending conflicts, one conflict with both lessons side by side, and the decision.

Viewers may read; only approvers decide. Every decision that changes lessons is one batch on the
memory's history, and its success message links there to revert it. htmx requests get the
conflict's card (or the list's cards) in their new state; plain form posts a message and a redirect.
"""

from django.contrib import messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.paginator import Paginator
from django.http import Http404
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.views.decorators.http import require_POST

from memory.access import (
    APPROVE,
    can,
    ensure_visible,
    get_for_user_or_404,
    memory_for_user_or_404,
    visible_memories,
    visible_memory_ids,
)
from memory.conflicts import CONFLICT_MARK, selectors
from memory.conflicts.services import (
    conflict_edit_and_keep,
    conflict_keep_both,
    conflict_keep_newer,
    conflict_keep_older,
    conflict_reopen,
    conflicts_bulk_decide,
    conflicts_detect_request,
)
from memory.lessons.views.history import BATCHES_PER_PAGE
from memory.models import ALL_CATEGORIES, CORE_CATEGORIES, LessonConflict
from memory.roles import approver_required, viewer_required
from memory.services import Actor
from memory.textcheck import bounded_id
from memory.web import bulk_selection, error_messages, none_to_decide

DECISIONS = {
    "keep_newer": "Kept the newer lesson; the older one is superseded by it.",
    "keep_older": "Kept the older lesson; the newer one is deleted (restorable).",
    "keep_both": "Kept both; this pair will not be proposed again (Reopen on its card undoes it).",
}
KEEP_ONE = {"keep_newer": conflict_keep_newer, "keep_older": conflict_keep_older}
EDITED = {
    "keep_newer": "Edited the newer lesson and kept it; the older one is superseded by it.",
    "keep_older": "Edited the older lesson and kept it; the newer one is deleted (restorable).",
}
CHOOSE = "Choose keep the newer, keep the older or keep both."


def _context(request, **extra):
    return {
        "mark": CONFLICT_MARK,
        "can_approve": can(request.user, APPROVE),
        "core_categories": CORE_CATEGORIES,
        "all_categories": ALL_CATEGORIES,
        **extra,
    }


def with_revert_urls(conflicts):
    """Set `revert_url` on each conflict: its decision's batch on the memory's history page (on the
    page of that history that shows it), "" when the decision changed no lesson."""
    positions = selectors.history_positions(conflicts)
    for conflict in conflicts:
        conflict.revert_url = ""
        if conflict.batch_id in positions:
            page = positions[conflict.batch_id] // BATCHES_PER_PAGE + 1
            query = f"?page={page}" if page > 1 else ""
            conflict.revert_url = f"{conflict.memory.history_url()}{query}#batch-{conflict.batch_id}"
    return conflicts


def _with_revert_link(text, conflict):
    url = conflict.revert_url
    if not url:
        return text
    return format_html(
        '{} <a class="revert-link" href="{}">Revert batch #{}</a> in the memory’s history to undo it.',
        text,
        url,
        conflict.batch_id,
    )


def _pending_count(request):
    """What the list's heading counts, sent along with a decision's answer so it follows."""
    return selectors.pending_conflicts(visible_memory_ids(request.user)).count()


@viewer_required
def inbox(request):
    pending = selectors.pending_conflicts(visible_memory_ids(request.user))
    page = Paginator(pending, selectors.INBOX_ROWS).get_page(request.GET.get("page") or 1)
    return TemplateResponse(
        request, "memory/conflicts/inbox.html", _context(request, page=page, conflicts=page.object_list)
    )


@viewer_required
def detail(request, pk):
    ensure_visible(request.user, LessonConflict.objects.all(), pk=pk)
    conflict = selectors.conflict_for_review(pk)
    if conflict is None:
        raise Http404("No such conflict")
    with_revert_urls([conflict])
    return TemplateResponse(
        request, "memory/conflicts/detail.html", _context(request, conflict=conflict, on_detail=True)
    )


def _after_decision(request, pk, *, error="", success="", conflict=None):
    """htmx: the conflict's card in its new state; otherwise a message and the page the form was on.
    A refused edit comes back with the reviewer's own words (on the detail page without htmx too)."""
    on_detail = request.POST.get("next") == "detail"
    draft = request.POST if error and request.POST.get("edit") == "1" else None
    if request.htmx or draft is not None:
        conflict = conflict or with_revert_urls([selectors.conflict_for_review(pk)])[0]
        context = _context(
            request,
            conflict=conflict,
            on_detail=on_detail,
            error=error,
            success=success,
            draft=draft,
            draft_side=draft.get("decision", "").removeprefix("keep_") if draft is not None else "",
        )
        if request.htmx:
            if not on_detail:
                context["pending_count"] = _pending_count(request)
            return TemplateResponse(request, "memory/conflicts/inbox.html#card-response", context)
        return TemplateResponse(request, "memory/conflicts/detail.html", {**context, "on_detail": True}, status=400)
    if error:
        messages.error(request, error)
    else:
        messages.success(request, success)
    return redirect("conflicts:detail", pk=pk) if on_detail else redirect(_inbox_url(request))


@require_POST
@approver_required
def decide(request, pk):
    conflict = get_for_user_or_404(request.user, LessonConflict.objects.select_related("memory"), pk=pk, action=APPROVE)
    decision = request.POST.get("decision", "")
    if decision not in DECISIONS:
        return _after_decision(request, pk, error=CHOOSE)
    actor, reason = Actor.for_user(request.user), request.POST.get("reason", "")
    edit = request.POST.get("edit") == "1" and decision in EDITED
    try:
        if edit:
            decided = conflict_edit_and_keep(
                conflict=conflict,
                keep=decision.removeprefix("keep_"),
                text=request.POST.get("text", ""),
                category=request.POST.get("category") or None,
                refs=request.POST.get("refs"),
                actor=actor,
                reason=reason,
            )
        elif decision == "keep_both":
            decided = conflict_keep_both(conflict=conflict, actor=actor)
        else:
            decided = KEEP_ONE[decision](conflict=conflict, actor=actor, reason=reason)
    except (ValidationError, PermissionDenied) as exc:
        return _after_decision(request, pk, error=f"Not decided: {' '.join(error_messages(exc))}")
    done = EDITED[decision] if edit else DECISIONS[decision]
    reviewed = with_revert_urls(selectors.conflicts_for_review([decided.pk]))[0]
    return _after_decision(request, pk, success=_with_revert_link(done, reviewed), conflict=reviewed)


@require_POST
@approver_required
def reopen(request, pk):
    """Undo "keep both": the conflict waits again."""
    conflict = get_for_user_or_404(request.user, LessonConflict.objects.all(), pk=pk, action=APPROVE)
    try:
        conflict_reopen(conflict=conflict, actor=Actor.for_user(request.user))
    except ValidationError as exc:
        return _after_decision(request, pk, error=f"Not reopened: {' '.join(error_messages(exc))}")
    return _after_decision(request, pk, success="Reopened: this conflict waits for review again.")


@require_POST
@approver_required
def bulk_decide(request):
    """One decision for the selected conflicts; each lands in its own revertible batch. htmx gets the
    outcome and each card in its new state, a plain form post a message and the list again."""
    done: list[LessonConflict] = []
    refused: list[str] = []
    error = ""
    try:
        ids = bulk_selection(request.POST.getlist("conflict"), noun="conflict")
        conflicts = list(
            LessonConflict.objects.filter(pk__in=ids, memory__in=visible_memories(request.user, APPROVE))
            .select_related("memory")
            .order_by("pk")
        )
        if not conflicts:
            raise none_to_decide(ids, noun="conflict")
        done, refused = conflicts_bulk_decide(
            conflicts=conflicts,
            decision=request.POST.get("decision", ""),
            actor=Actor.for_user(request.user),
            reason=request.POST.get("reason", ""),
        )
    except ValidationError as exc:
        error = f"Nothing decided: {'; '.join(exc.messages)}"
    cards = [] if error else with_revert_urls(selectors.conflicts_for_review([c.pk for c in conflicts]))
    decided = [c for c in cards if c.pk in {d.pk for d in done}]
    if request.htmx:
        context = _context(
            request,
            bulk_error=error,
            decided=decided,
            refused=refused,
            cards=cards,
            oob=True,
            pending_count=_pending_count(request),
        )
        return TemplateResponse(request, "memory/conflicts/inbox.html#bulk-response", context)
    if error:
        messages.error(request, error)
        return redirect(_inbox_url(request))
    messages.success(request, _bulk_summary(decided))
    for refusal in refused:
        messages.warning(request, refusal)
    return redirect(_inbox_url(request))


def _bulk_summary(decided):
    """ "Decided 2 conflicts: #3 (revert batch #10), …" with each batch linked to where it is reverted."""
    items = format_html_join(
        ", ",
        "#{}{}",
        (
            (c.pk, format_html(' (<a class="revert-link" href="{}">revert batch #{}</a>)', c.revert_url, c.batch_id))
            if c.batch_id
            else (c.pk, "")
            for c in decided
        ),
    )
    count = len(decided)
    return format_html("Decided {} conflict{}{}{}.", count, "s" if count != 1 else "", ": " if count else "", items)


def _inbox_url(request):
    """The list again, on the page the form was sent from."""
    page = bounded_id(request.POST.get("page", ""))
    return reverse("conflicts:inbox") + (f"?page={page}" if page and page > 1 else "")


@require_POST
@approver_required
def detect(request):
    """ "Check now": a full detection pass on one memory (`memory`) or on every memory this person
    governs, queued; what it finds joins the list when it has run."""
    raw = request.POST.get("memory", "")
    memory = None
    if raw:
        memory = memory_for_user_or_404(request.user, pk=bounded_id(raw) or 0, action=APPROVE)
    targets = conflicts_detect_request(memory=memory, within=visible_memories(request.user, APPROVE))
    if targets:
        names = ", ".join(f"{m.persona.name} × {m.project.name}" for m in targets[:3])
        more = f" and {len(targets) - 3} more" if len(targets) > 3 else ""
        messages.info(request, f"Conflict check queued for {names}{more}; what it finds shows here when it has run.")
    else:
        messages.warning(request, "Nothing to check: detection runs only on memories of active personas.")
    return redirect("conflicts:inbox")
