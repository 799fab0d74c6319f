"""The promotion inbox: review candidates for core memory, approve (optionally edited) or reject.

Viewers may read the inbox; only approvers see and use the decision buttons. Agent tokens never
reach these views: they need a signed-in session with the approver permission.
"""

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import Http404
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.views.decorators.http import require_POST

from memory.access import (
    APPROVE,
    can,
    ensure_visible,
    get_for_user_or_404,
    memory_for_user_or_404,
    visible_memories,
    visible_memory_ids,
    visible_personas,
    visible_projects,
)
from memory.models import CORE_CATEGORIES, PromotionBulkDecision, PromotionCandidate
from memory.promotions import selectors
from memory.promotions.services import (
    BULK_MAX,
    AlreadyDecided,
    NeedsReview,
    detection_status,
    promotion_approve,
    promotion_bulk_decide,
    promotion_detect_request,
    promotion_reject,
)
from memory.roles import approver_required, viewer_required
from memory.services import Actor
from memory.textcheck import bounded_id
from memory.web import bulk_selection, none_to_decide

Status = PromotionCandidate.Status
RECENT_DECISIONS = 10
RECENT_BULK = 5
DETECTION_ROWS = 10


def _memory_filter(request, action=None):
    raw = request.GET.get("memory") or request.POST.get("memory")
    if not raw:
        return None
    return memory_for_user_or_404(request.user, pk=bounded_id(raw) or 0, **({"action": action} if action else {}))


def _context(request, memory=None, **extra):
    return {
        "can_approve": can(request.user, APPROVE, memory),
        "core_categories": CORE_CATEGORIES,
        "memory": memory,
        **extra,
    }


def _inbox_filters(request):
    """The inbox's filters from the query string, and a sentence for each value that was not understood
    (that filter is then left out, so a bad link still shows the inbox)."""
    errors = []

    def whole(name, label):
        raw = request.GET.get(name, "")
        if not raw:
            return None
        value = bounded_id(raw)
        if value is None:
            errors.append(f"The {label} filter “{raw[:40]}” is not one of the choices; it is not applied.")
        return value

    kind = request.GET.get("kind", "")
    if kind and kind not in selectors.KINDS:
        errors.append(f"The kind filter “{kind[:40]}” is not one of the choices; it is not applied.")
        kind = ""
    age = whole("age", "waiting time")
    if age is not None and age not in selectors.AGES:
        errors.append(f"The waiting time filter “{age}” is not one of the choices; it is not applied.")
        age = None
    filters = selectors.InboxFilters(
        persona=whole("persona", "persona"), project=whole("project", "project"), kind=kind, min_age_days=age
    )
    return filters, errors


def _detection_rows(memory, cards):
    """Recent detection runs of the memories on this page (or the filtered one), newest first: what
    the page reads stays bounded by its size, however many memories there are."""
    memories = {c.memory_id: c.memory for c in cards}
    if memory:
        memories[memory.pk] = memory
    status = detection_status(list(memories))
    latest = sorted(status.items(), key=lambda item: item[1]["at"], reverse=True)[:DETECTION_ROWS]
    return [{"memory": f"{memories[pk].persona.name} × {memories[pk].project.name}", **row} for pk, row in latest]


@viewer_required
def inbox(request):
    memory = _memory_filter(request)
    filters, filter_errors = _inbox_filters(request)
    if memory:
        filters = selectors.InboxFilters(**{**filters.__dict__, "memory": memory.pk})
    page = selectors.inbox_page(user=request.user, filters=filters, page=request.GET.get("page") or 1)
    query = request.GET.copy()
    query.pop("page", None)
    runs = _detection_rows(memory, page.object_list)
    return TemplateResponse(
        request,
        "memory/promotions/inbox.html",
        _context(
            request,
            memory=memory,
            page=page,
            pending=page.object_list,
            filters=filters,
            filter_errors=filter_errors,
            query=query.urlencode(),
            personas=visible_personas(request.user).order_by("name").values_list("pk", "name"),
            projects=visible_projects(request.user).order_by("name").values_list("pk", "name"),
            kinds=selectors.KINDS,
            ages=selectors.AGES,
            decided=selectors.recent_decisions(user=request.user, filters=filters, limit=RECENT_DECISIONS),
            bulk_decisions=selectors.recent_bulk_decisions(user=request.user, limit=RECENT_BULK),
            detection_status=runs,
            detection_running=any(r["state"] in ("queued", "running") for r in runs),
        ),
    )


@viewer_required
def supporting(request, pk):
    """A card's supporting lessons, loaded when the card is opened; without htmx, the candidate's page."""
    candidate = (
        selectors.inbox_candidates(user=request.user, statuses=Status.values)
        .select_related("memory__project")
        .filter(pk=pk)
        .first()
    )
    if candidate is None:
        raise Http404("No such promotion candidate")
    if not request.htmx:
        return redirect("promotions:detail", pk=pk)
    lessons = list(selectors.supporting_lessons().filter(promotion_candidates=candidate))
    return TemplateResponse(
        request, "memory/promotions/inbox.html#supporting-table", {"candidate": candidate, "lessons": lessons}
    )


@viewer_required
def candidate_detail(request, pk):
    ensure_visible(request.user, PromotionCandidate.objects.all(), pk=pk)
    candidate = selectors.candidate_for_review(pk, user=request.user)
    if candidate is None:
        raise Http404("No such promotion candidate")
    return TemplateResponse(
        request, "memory/promotions/detail.html", _context(request, memory=candidate.memory, candidate=candidate)
    )


def _card_response(request, pk, *, error="", warning="", success=""):
    """htmx: the candidate's card in its new state, plus the nav badge out of band."""
    on_detail = request.POST.get("next") == "detail"
    (candidate,) = selectors.candidates_for_review(
        user=request.user, statuses=Status.values, pks=[pk], with_lessons=on_detail
    )
    # A refused edit comes back with the reviewer's own text, not the proposal.
    draft = request.POST if error and request.POST.get("edit") == "1" else None
    return TemplateResponse(
        request,
        "memory/promotions/inbox.html#card-response",
        _context(
            request,
            memory=candidate.memory,
            candidate=candidate,
            error=error,
            warning=warning,
            success=success,
            pending_count=selectors.pending_count(visible_memory_ids(request.user)),
            on_detail=on_detail,
            draft=draft,
        ),
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
    candidate = get_for_user_or_404(
        request.user, PromotionCandidate.objects.select_related("memory"), pk=pk, action=APPROVE
    )
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
        request,
        pk,
        warning=warning,
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
def bulk_decide(request):
    """Approve or reject the selected candidates; htmx gets the outcome and each card in its new
    state, a plain form post a message and the inbox again."""
    outcome, error, decidable = None, "", set()
    try:
        ids = bulk_selection(request.POST.getlist("candidate"), noun="candidate", limit=BULK_MAX)
        # Only candidates this person can see in the inbox; others answer as if they did not exist.
        visible = set(
            selectors.inbox_candidates(user=request.user, statuses=Status.values)
            .filter(pk__in=ids)
            .values_list("pk", flat=True)
        )
        decidable = set(
            selectors.inbox_candidates(user=request.user, action=APPROVE, statuses=Status.values)
            .filter(pk__in=visible)
            .values_list("pk", flat=True)
        )
        if not decidable:
            raise none_to_decide(ids, noun="candidate")
        outcome = promotion_bulk_decide(
            candidate_ids=[i for i in ids if i in decidable],
            actor=Actor.for_user(request.user),
            action=request.POST.get("action", ""),
            reason=request.POST.get("reason", ""),
        )
    except ValidationError as exc:
        error = f"Nothing was decided: {_validation_text(exc)}"
    else:
        outcome.refused.extend({"id": i, "message": f"Candidate #{i} does not exist."} for i in ids if i not in visible)
        outcome.refused.extend(
            {"id": i, "message": f"Candidate #{i} needs the approver role in its team."}
            for i in ids
            if i in visible and i not in decidable
        )
    if request.htmx:
        cards = (
            selectors.candidates_for_review(
                user=request.user, statuses=Status.values, pks=sorted(decidable), with_lessons=False
            )
            if outcome
            else []
        )
        return TemplateResponse(
            request,
            "memory/promotions/inbox.html#bulk-response",
            _context(
                request,
                outcome=outcome,
                bulk_error=error,
                cards=cards,
                oob=True,
                pending_count=selectors.pending_count(visible_memory_ids(request.user)),
            ),
        )
    if error:
        messages.error(request, error)
    else:
        _bulk_messages(request, outcome)
    url = redirect("promotions:inbox")
    next_query = request.POST.get("next", "")
    if next_query and "\n" not in next_query and "\r" not in next_query:
        url["Location"] += "?" + next_query
    return url


def _bulk_messages(request, outcome):
    verb = "Approved" if outcome.bulk.action == PromotionBulkDecision.Action.APPROVE else "Rejected"
    decided = ", ".join(f"#{pk}" for pk in outcome.decided)
    messages.success(
        request,
        f"{verb} {len(outcome.decided)} of {len(outcome.bulk.requested)}" + (f": {decided}." if decided else "."),
    )
    if outcome.already:
        messages.warning(
            request,
            "Already decided by someone else: "
            + ", ".join(f"#{item['id']} ({item['status']} by {item['by']})" for item in outcome.already)
            + ".",
        )
    if outcome.changed:
        messages.warning(
            request,
            "Not approved because a supporting lesson changed since it was proposed: "
            + ", ".join(f"#{item['id']}" for item in outcome.changed)
            + ". Review them again.",
        )
    for item in outcome.refused:
        messages.error(request, f"#{item['id']}: {item['message']}")


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
