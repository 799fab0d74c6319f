"""The promotion inbox: review candidates for core memory, approve (optionally edited) or reject.

Viewers may read the inbox; only approvers see and use the decision buttons. Agent tokens never
reach these views: they need a signed-in session with the approver permission.
"""

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect
from django.template.response import TemplateResponse
from django.views.decorators.http import require_POST

from memory.models import CORE_CATEGORIES, Memory, PromotionCandidate
from memory.promotions import selectors
from memory.promotions.services import (
    AlreadyDecided,
    NeedsReview,
    detection_status,
    promotion_approve,
    promotion_detect_request,
    promotion_reject,
)
from memory.access import (
    APPROVE,
    can,
    ensure_visible,
    get_for_user_or_404,
    memory_for_user_or_404,
    visible_memories,
    visible_memory_ids,
)
from memory.roles import approver_required, viewer_required
from memory.services import Actor
from memory.textcheck import bounded_id

Status = PromotionCandidate.Status
RECENT_DECISIONS = 10


def _memory_filter(request, action=None):
    raw = request.GET.get("memory") or request.POST.get("memory")
    if not raw:
        return None
    return memory_for_user_or_404(request.user, pk=bounded_id(raw) or 0, **({"action": action} if action else {}))


def _context(request, memory=None, **extra):
    return {"can_approve": can(request.user, APPROVE, memory), "core_categories": CORE_CATEGORIES, **extra}


@viewer_required
def inbox(request):
    memory = _memory_filter(request)
    memory_ids = [memory.pk] if memory else visible_memory_ids(request.user)
    pending = selectors.candidates_for_review(memory_ids=memory_ids)
    decided = selectors.candidates_for_review(
        statuses=(Status.APPROVED, Status.REJECTED, Status.REVERTED), memory_ids=memory_ids, limit=RECENT_DECISIONS
    )
    memories = list(visible_memories(request.user).select_related("persona", "project")
                    .order_by("persona__name", "project__name"))
    status = detection_status([m.pk for m in memories if memory is None or m.pk == memory.pk])
    runs = [{"memory": f"{m.persona.name} × {m.project.name}", **status[m.pk]} for m in memories if m.pk in status]
    return TemplateResponse(
        request,
        "memory/promotions/inbox.html",
        _context(request, memory=memory, pending=pending, decided=decided, memories=memories,
                 recurring=[c for c in pending if not c.from_pipeline],
                 reflections=[c for c in pending if c.from_pipeline],
                 detection_status=runs,
                 detection_running=any(r["state"] in ("queued", "running") for r in runs)),
    )


@viewer_required
def candidate_detail(request, pk):
    ensure_visible(request.user, PromotionCandidate.objects.all(), pk=pk)
    candidate = selectors.candidate_for_review(pk)
    if candidate is None:
        raise Http404("No such promotion candidate")
    return TemplateResponse(request, "memory/promotions/detail.html",
                            _context(request, memory=candidate.memory, candidate=candidate))


def _card_response(request, pk, *, error="", warning="", success=""):
    """htmx: the candidate's card in its new state, plus the nav badge out of band."""
    candidate = selectors.candidate_for_review(pk)
    # A refused edit comes back with the reviewer's own text, not the proposal.
    draft = request.POST if error and request.POST.get("edit") == "1" else None
    return TemplateResponse(
        request,
        "memory/promotions/inbox.html#card-response",
        _context(request, memory=candidate.memory, candidate=candidate, error=error, warning=warning,
                 success=success, pending_count=selectors.pending_count(visible_memory_ids(request.user)), on_detail=request.POST.get("next") == "detail",
                 draft=draft),
    )


def _after_decision(request, pk, *, error="", warning="", success=""):
    if request.htmx:
        return _card_response(request, pk, error=error, warning=warning, success=success)
    for level, text in ((messages.ERROR, error), (messages.WARNING, warning), (messages.SUCCESS, success)):
        if text:
            messages.add_message(request, level, text)
    if request.POST.get("next") == "detail":
        return redirect("promotions:detail", pk=pk)
    return redirect("promotions:inbox")


def _validation_text(exc):
    if hasattr(exc, "message_dict"):
        return " ".join(f"{msg}" for msgs in exc.message_dict.values() for msg in msgs)
    return " ".join(exc.messages)


@require_POST
@approver_required
def approve(request, pk):
    candidate = get_for_user_or_404(request.user, PromotionCandidate.objects.select_related("memory"), pk=pk,
                                    action=APPROVE)
    edit = request.POST.get("edit") == "1"
    kwargs = {}
    if edit:
        kwargs = {
            "text": request.POST.get("text", ""),
            "category": request.POST.get("category", ""),
            "refs": request.POST.get("refs", ""),
        }
    try:
        result = promotion_approve(candidate=candidate, actor=Actor.for_user(request.user), **kwargs)
    except AlreadyDecided as exc:
        return _after_decision(request, pk, error=str(exc))
    except NeedsReview as exc:
        # Refresh the proposals so the reviewer gets an up-to-date one to look at.
        promotion_detect_request(memory=candidate.memory)
        return _after_decision(request, pk, error=str(exc))
    except ValidationError as exc:
        return _after_decision(request, pk, error=f"Not approved: {_validation_text(exc)}")
    warning = ""
    if result.over_budget:
        warning = (
            f"Core memory of {candidate.memory} is now {result.core_chars} characters, over its budget of "
            f"{result.core_budget} by {result.core_chars - result.core_budget}. Nothing was cut; the agents see "
            "the first core lessons that fit. Review the core lessons."
        )
    return _after_decision(
        request, pk, warning=warning,
        success=f"Promoted to core as lesson #{result.core_lesson.pk} in {candidate.memory}.",
    )


@require_POST
@approver_required
def reject(request, pk):
    candidate = get_for_user_or_404(request.user, PromotionCandidate.objects.all(), pk=pk, action=APPROVE)
    try:
        promotion_reject(candidate=candidate, actor=Actor.for_user(request.user), reason=request.POST.get("reason", ""))
    except AlreadyDecided as exc:
        return _after_decision(request, pk, error=str(exc))
    except ValidationError as exc:
        return _after_decision(request, pk, error=f"Not rejected: {_validation_text(exc)}")
    return _after_decision(request, pk, success="Rejected. Its lessons stay in working memory.")


@require_POST
@approver_required
def detect(request):
    memory = _memory_filter(request, action=APPROVE)
    targets = promotion_detect_request(memory=memory, within=visible_memories(request.user, APPROVE))
    if targets:
        names = ", ".join(f"{m.persona.name} × {m.project.name}" for m in targets[:3])
        more = f" and {len(targets) - 3} more" if len(targets) > 3 else ""
        messages.info(request, f"Detection queued for {names}{more}; its outcome shows below when it finishes.")
    else:
        messages.warning(request, "Nothing to detect: detection runs only on memories of active personas.")
    url = redirect("promotions:inbox")
    if memory:
        url["Location"] += f"?memory={memory.pk}"
    return url
