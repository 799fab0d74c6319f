"""Compaction pages: the list of proposals and the review of one (summary, lesson view, diff, decisions)."""

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import Http404
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.views.decorators.http import require_POST
from django_htmx.http import HttpResponseClientRedirect

from memory.access import APPROVE, can, ensure_visible, get_for_user_or_404, memory_for_user_or_404, scope
from memory.compaction import selectors
from memory.compaction.selectors import compaction_needed, over_limits_explanation, working_lessons
from memory.compaction.services import (
    CompactionError,
    compaction_apply,
    compaction_bulk_reject,
    compaction_line_update,
    compaction_mark_stale,
    compaction_reject,
    compaction_revert,
)
from memory.compaction.staleness import covered_changes
from memory.formats.lines import render_working
from memory.jobs import enqueue_on_commit
from memory.listing import ListFilters, page_of
from memory.models import ALL_CATEGORIES, CompactionProposal, ProposalLine
from memory.roles import approver_required, viewer_required
from memory.selectors import with_refs
from memory.services import Actor, RevertError
from memory.web import decide


def _detail_url(proposal_pk):
    return reverse("compaction-detail", args=[proposal_pk])


def _redirect(request, url):
    if request.htmx:
        return HttpResponseClientRedirect(url)
    return redirect(url)


PROPOSALS_PER_PAGE = 20
MEMORIES_PER_PAGE = 20


@viewer_required
def compaction_list(request):
    filters = ListFilters.from_request(request, kinds=CompactionProposal.Status.choices, kind_param="status")
    proposals = page_of(request, filters.apply(selectors.proposals_for_list(user=request.user)), PROPOSALS_PER_PAGE)
    memories = page_of(
        request,
        filters.apply(selectors.memories_for_list(user=request.user), memory="", created=None, kind_field=None),
        MEMORIES_PER_PAGE,
        param="mpage",
    )
    context = {
        "filters": filters,
        "choices": filters.choices(),
        "proposals_page": proposals,
        "proposals": selectors.with_line_counts(proposals.object_list),
        "proposals_query": filters.query_string(mpage=request.GET.get("mpage", "")),
        "memories_page": memories,
        "memories": selectors.with_working_counts(memories.object_list),
        "memories_query": filters.query_string(page=request.GET.get("page", "")),
        "can_approve": can(request.user, APPROVE),
    }
    return TemplateResponse(request, "memory/compaction/list.html", context)


@require_POST
@approver_required
def compaction_bulk_reject_view(request):
    """Reject the selected proposals with one reason; the list says which went and which could not."""
    from memory.web import bulk_selection, none_to_decide

    try:
        ids = bulk_selection(request.POST.getlist("proposal"), noun="proposal")
        # Proposals of memories this person may not decide answer as if they did not exist.
        decidable = set(
            scope(CompactionProposal.objects.filter(pk__in=ids), request.user, APPROVE).values_list("pk", flat=True)
        )
        if not decidable:
            raise none_to_decide(ids, noun="proposal")
        outcome = compaction_bulk_reject(
            proposal_ids=[i for i in ids if i in decidable],
            actor=Actor.for_user(request.user),
            reason=request.POST.get("reason", ""),
        )
        outcome["refused"].extend({"id": i, "message": "there is no such proposal."} for i in ids if i not in decidable)
    except ValidationError as exc:
        messages.error(request, "Nothing was rejected: " + " ".join(exc.messages))
    else:
        if outcome["rejected"]:
            messages.success(
                request,
                f"Rejected {len(outcome['rejected'])} of {len(ids)}: "
                + ", ".join(f"#{pk}" for pk in outcome["rejected"])
                + ". Working memory is unchanged.",
            )
        for item in outcome["refused"]:
            messages.warning(request, f"#{item['id']} not rejected: {item['message']}")
    return redirect("compaction-list")


def _review_context(request, pk, **extra):
    ensure_visible(request.user, CompactionProposal.objects.all(), pk=pk)
    try:
        proposal = selectors.proposal_for_review(pk)
    except CompactionProposal.DoesNotExist:
        raise Http404("No such compaction proposal") from None
    pending = proposal.status == CompactionProposal.Status.PENDING
    applied = proposal.status == CompactionProposal.Status.APPLIED
    review = selectors.proposal_review(proposal)
    return {
        "still_over": over_limits_explanation(proposal.memory) if applied else "",
        "review": review,
        "proposal": proposal,
        # While it waits: what agents appended meanwhile (kept as is) and what would make it stale.
        "appended": selectors.appended_since(proposal) if pending else [],
        "stale_changes": covered_changes(proposal, proposal.memory, review.inputs_by_id) if pending else [],
        "recomputations": (
            list(proposal.recomputations.order_by("id")) if proposal.status == CompactionProposal.Status.STALE else []
        ),
        "can_approve": can(request.user, APPROVE, proposal.memory),
        "categories": ALL_CATEGORIES,
        **extra,
    }


@viewer_required
def compaction_detail(request, pk):
    return TemplateResponse(request, "memory/compaction/detail.html", _review_context(request, pk))


@approver_required
def compaction_line_edit(request, pk, line_pk):
    line = get_for_user_or_404(
        request.user,
        ProposalLine.objects.select_related("proposal"),
        pk=line_pk,
        proposal_id=pk,
        action=APPROVE,
        via="proposal__memory__project__team",
    )
    form = {"category": line.category, "text": line.text, "refs": ", ".join(line.refs)}
    errors = []
    if request.method == "POST":
        form = {key: request.POST.get(key, "") for key in ("category", "text", "refs")}
        try:
            compaction_line_update(line=line, actor=Actor.for_user(request.user), **form)
        except ValidationError as exc:
            errors = exc.messages
        except CompactionError as exc:
            errors = [str(exc)]
        else:
            messages.success(request, f"Line {line.position} updated; the proposal was validated again.")
            if request.htmx:
                # A bare #fragment change would not reload the page, and the summary and diff must refresh.
                return HttpResponseClientRedirect(_detail_url(pk))
            return redirect(_detail_url(pk) + f"#line-{line.position}")
    if request.htmx:
        context = {
            "line": line,
            "form": form,
            "errors": errors,
            "proposal": line.proposal,
            "categories": ALL_CATEGORIES,
        }
        return TemplateResponse(request, "memory/compaction/detail.html#line-edit", context)
    context = _review_context(request, pk, editing_line_id=line.pk, form=form, errors=errors)
    return TemplateResponse(request, "memory/compaction/detail.html", context)


@require_POST
@approver_required
def compaction_apply_view(request, pk):
    proposal = get_for_user_or_404(request.user, CompactionProposal.objects.all(), pk=pk, action=APPROVE)

    def applied(batch):
        still_over = over_limits_explanation(proposal.memory)
        if still_over:
            messages.warning(request, f"Working memory is still over its limits: {still_over}")
        return f"Compaction applied as {batch}. It can be reverted from this page."

    return decide(
        request,
        lambda: compaction_apply(proposal=proposal, actor=Actor.for_user(request.user)),
        refused=CompactionError,
        prefix="Not applied: ",
        then=_detail_url(pk),
        done=applied,
    )


@require_POST
@approver_required
def compaction_recompute_view(request, pk):
    """One click on a stale proposal: retire it and compute a new one from the memory as it is now."""
    proposal = get_for_user_or_404(request.user, CompactionProposal.objects.all(), pk=pk, action=APPROVE)
    try:
        compaction_mark_stale(proposal=proposal)
    except CompactionError as exc:
        messages.error(request, f"Not recomputed: {exc}")
        return _redirect(request, _detail_url(pk))
    enqueue_on_commit("memory.compaction.propose", proposal.memory_id, request.user.pk, recomputed_from_id=pk)
    new = proposal.recomputations.order_by("-id").first()  # already there when tasks run in-process
    if new is not None:
        messages.success(request, f"Recomputed as proposal #{new.pk} from the memory as it is now.")
        return _redirect(request, _detail_url(new.pk))
    messages.success(request, "Recomputing: the new proposal is linked from this page when it is ready.")
    return _redirect(request, _detail_url(pk))


@require_POST
@approver_required
def compaction_reject_view(request, pk):
    proposal = get_for_user_or_404(request.user, CompactionProposal.objects.all(), pk=pk, action=APPROVE)
    return decide(
        request,
        lambda: compaction_reject(
            proposal=proposal, actor=Actor.for_user(request.user), reason=request.POST.get("reason", "")
        ),
        refused=(ValidationError, CompactionError),
        then=_detail_url(pk),
        done="Proposal rejected; working memory is unchanged.",
    )


@require_POST
@approver_required
def compaction_revert_view(request, pk):
    proposal = get_for_user_or_404(request.user, CompactionProposal.objects.all(), pk=pk, action=APPROVE)
    return decide(
        request,
        lambda: compaction_revert(
            proposal=proposal, actor=Actor.for_user(request.user), reason=request.POST.get("reason", "")
        ),
        refused=(CompactionError, RevertError, ValidationError),
        prefix="Not reverted: ",
        then=_detail_url(pk),
        done="Compaction reverted: working memory is as it was before.",
    )


def _usage(memory):
    lessons = working_lessons(memory)
    chars = len(render_working(with_refs(lessons)))
    return (
        f"{len(lessons)} of {memory.max_working_lines} lessons, {chars:,} of {memory.working_char_budget:,} characters"
    )


@require_POST
@approver_required
def compaction_propose_view(request, memory_pk):
    memory = memory_for_user_or_404(request.user, pk=memory_pk, action=APPROVE)
    pending = CompactionProposal.objects.filter(memory=memory, status=CompactionProposal.Status.PENDING).first()
    if pending:
        messages.info(request, "A proposal for this memory is already waiting for review.")
        return _redirect(request, _detail_url(pending.pk))
    if not memory.lessons.filter(tier="working", status="active").exists():
        messages.error(request, "Working memory is empty; there is nothing to compact.")
        return _redirect(request, reverse("compaction-list"))
    if not compaction_needed(memory):
        messages.info(
            request,
            f"Nothing to compact: {memory}'s working memory is within its limits "
            f"({_usage(memory)}). No proposal was made.",
        )
        return _redirect(request, reverse("compaction-list"))
    enqueue_on_commit("memory.compaction.propose", memory.pk, request.user.pk)
    messages.success(request, f"Computing a compaction proposal for {memory}. It appears below when ready.")
    return _redirect(request, reverse("compaction-list"))
