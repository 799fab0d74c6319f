"""Temporary lessons, for people: proposed expiries to accept (as proposed or edited) or reject, and
expired lessons to restore (the expiry cleared or moved) or retire.

Viewers may read; only approvers of the lesson's team decide. Each decision is one batch on the
memory's history that revert undoes. htmx swaps the one row; without it the page is sent again.
"""

from datetime import date, datetime, time

from django.contrib import messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.paginator import Paginator
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_POST

from memory.access import APPROVE, access_for, get_for_user_or_404, visible_memories, visible_memory_ids
from memory.conflicts import expiry_selectors as selectors
from memory.conflicts.expiries import (
    expired_lesson_restore,
    expired_lesson_retire,
    expiries_bulk_decide,
    expiry_accept,
    expiry_reject,
)
from memory.models import ExpiryProposal, Lesson
from memory.roles import approver_required, viewer_required
from memory.services import Actor
from memory.web import bulk_selection, error_messages, none_to_decide, reason_from, safe_next

TEMPLATE = "memory/conflicts/expiries.html"
TABS = ("proposals", "expired")


def _tab(request):
    show = request.GET.get("show") or request.POST.get("show") or ""
    return show if show in TABS else "proposals"


def _expired_since(lesson):
    """When an expired lesson began to wait: the start of its expires_on day."""
    return timezone.make_aware(datetime.combine(lesson.expires_on, time.min))


def _may_decide(request, memory):
    return access_for(request.user).in_team(APPROVE, memory.project.team_id)


def _proposal_row(request, proposal, *, error="", done=""):
    return {
        "proposal": proposal,
        "may_decide": _may_decide(request, proposal.memory),
        "error": error,
        "done": done,
    }


def _expired_row(request, lesson, *, error="", done=""):
    return {
        "lesson": lesson,
        "since": _expired_since(lesson) if lesson.expires_on else None,
        "may_decide": _may_decide(request, lesson.memory),
        "error": error,
        "done": done,
    }


@viewer_required
def expiries(request):
    """Both lists, one shown at a time (`show`), paginated; htmx asks for the list alone."""
    memory_ids = visible_memory_ids(request.user)
    show = _tab(request)
    proposals = selectors.proposals_for_review(memory_ids)
    expired = selectors.expired_for_review(memory_ids)
    page = Paginator(proposals if show == "proposals" else expired, selectors.PAGE_SIZE).get_page(
        request.GET.get("page")
    )
    if show == "proposals":
        rows = [_proposal_row(request, p) for p in page.object_list]
    else:
        rows = [_expired_row(request, lesson) for lesson in page.object_list]
    may_approve = access_for(request.user).anywhere(APPROVE)
    context = {
        "show": show,
        "page": page,
        "rows": rows,
        "counts": {
            "proposals": page.paginator.count if show == "proposals" else proposals.count(),
            "expired": page.paginator.count if show == "expired" else expired.count(),
        },
        "can_approve": may_approve,
        "bulk": may_approve and show == "proposals" and any(row["may_decide"] for row in rows),
        "query_string": f"show={show}",
        "today": timezone.localdate(),
    }
    template = TEMPLATE
    if request.htmx and request.htmx.target == "expiry-list":
        template += "#expiry-list"
    return TemplateResponse(request, template, context)


def _date_from(raw):
    """A date typed in a form: None when left empty; a clear error for anything not YYYY-MM-DD."""
    raw = (raw or "").strip()
    if not raw:
        return None
    try:
        return date.fromisoformat(raw)
    except ValueError:
        raise ValidationError(f"“{raw[:40]}” is not a date: use YYYY-MM-DD.") from None


def _answer(request, *, row, partial, error, done, show):
    """The row again (htmx), or the list with a message (a plain form)."""
    if request.htmx:
        return TemplateResponse(request, f"{TEMPLATE}#{partial}", {"row": row, "show": show})
    if error:
        messages.error(request, error)
    else:
        messages.success(request, done)
    return redirect(safe_next(request, reverse("conflicts:expiries") + f"?show={show}"))


@require_POST
@approver_required
def decide(request, pk):
    proposal = get_for_user_or_404(
        request.user,
        ExpiryProposal.objects.select_related("lesson", "memory__persona", "memory__project"),
        pk=pk,
        action=APPROVE,
    )
    decision = request.POST.get("decision", "")
    actor = Actor.for_user(request.user)
    error = done = ""
    try:
        if decision == "accept":
            expires_on = _date_from(request.POST.get("expires_on"))
            expires_when = request.POST.get("expires_when", "")
            expiry_accept(
                proposal=proposal,
                actor=actor,
                expires_on=expires_on,
                expires_when=expires_when,
                reason=reason_from(request),
            )
            done = "Accepted: the lesson now carries this expiry (revert it from the memory's history)."
        elif decision == "reject":
            expiry_reject(proposal=proposal, actor=actor)
            done = "Rejected: the lesson keeps no expiry and is not proposed again."
        else:
            raise ValidationError("Choose accept or reject.")
    except (ValidationError, PermissionDenied) as exc:
        error = "Not decided: " + " ".join(error_messages(exc))
    proposal.refresh_from_db()
    proposal.lesson.refresh_from_db()
    row = _proposal_row(request, proposal, error=error, done=done)
    if error and decision == "accept":  # show what was typed, so it can be corrected
        row["typed"] = {key: request.POST.get(key, "")[:2000] for key in ("expires_on", "expires_when")}
    return _answer(request, row=row, partial="proposal-row", error=error, done=done, show="proposals")


@require_POST
@approver_required
def bulk(request):
    """Accept (as proposed) or reject the selected proposals; each lands in its own revertible batch."""
    target = reverse("conflicts:expiries")
    try:
        ids = bulk_selection(request.POST.getlist("proposal"), noun="proposed expiry")
        proposals = list(
            ExpiryProposal.objects.filter(pk__in=ids, memory__in=visible_memories(request.user, APPROVE))
            .select_related("lesson", "memory")
            .order_by("pk")
        )
        if not proposals:
            raise none_to_decide(ids, noun="proposed expiry")
        decided, refused = expiries_bulk_decide(
            proposals=proposals,
            decision=request.POST.get("decision", ""),
            actor=Actor.for_user(request.user),
            reason=reason_from(request),
        )
    except ValidationError as exc:
        messages.error(request, f"Nothing decided: {'; '.join(exc.messages)}")
        return redirect(target)
    messages.success(request, f"Decided {decided} proposed expir{'ies' if decided != 1 else 'y'}.")
    for refusal in refused:
        messages.warning(request, refusal)
    return redirect(target)


def _expired_lesson(request, lesson_id):
    return get_for_user_or_404(
        request.user,
        Lesson.objects.select_related("memory__persona", "memory__project"),
        pk=lesson_id,
        action=APPROVE,
    )


def _expired_answer(request, lesson, *, error, done):
    lesson.refresh_from_db()
    row = _expired_row(request, lesson, error=error, done=done)
    return _answer(request, row=row, partial="expired-row", error=error, done=done, show="expired")


@require_POST
@approver_required
def restore(request, lesson_id):
    """Clear the expiry (no date given) or move it to a later day: agents read the lesson again."""
    lesson = _expired_lesson(request, lesson_id)
    error = done = ""
    try:
        expires_on = _date_from(request.POST.get("expires_on"))
        expired_lesson_restore(
            lesson=lesson, actor=Actor.for_user(request.user), expires_on=expires_on, reason=reason_from(request)
        )
        done = f"Restored until {expires_on.isoformat()}." if expires_on else "Restored: the lesson no longer expires."
    except (ValidationError, PermissionDenied) as exc:
        error = "Not restored: " + " ".join(error_messages(exc))
    return _expired_answer(request, lesson, error=error, done=done)


@require_POST
@approver_required
def retire(request, lesson_id):
    """Delete the expired lesson softly: it stays in history and can be restored."""
    lesson = _expired_lesson(request, lesson_id)
    error = done = ""
    try:
        expired_lesson_retire(lesson=lesson, actor=Actor.for_user(request.user), reason=reason_from(request))
        done = "Retired: the lesson is deleted (restorable from its history)."
    except (ValidationError, PermissionDenied) as exc:
        error = "Not retired: " + " ".join(error_messages(exc))
    return _expired_answer(request, lesson, error=error, done=done)
