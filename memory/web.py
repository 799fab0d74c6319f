"""Small helpers the views of every feature share."""

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.shortcuts import redirect
from django.template.loader import render_to_string
from django.template.response import TemplateResponse
from django.utils.http import url_has_allowed_host_and_scheme
from django_htmx.http import HttpResponseClientRedirect, HttpResponseStopPolling

from memory.services import Actor
from memory.textcheck import bounded_id

BULK_LIMIT = 500


def safe_next(request, default):
    """The `next` the form carried, when it points back into this site; else default."""
    target = request.POST.get("next") or request.GET.get("next")
    if target and url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return target
    return default


def actor_for(request):
    return Actor.for_user(request.user)


def reason_from(request):
    return (request.POST.get("reason") or "").strip()[:1000]


def error_messages(exc):
    """Readable messages from ValidationError / PermissionDenied / RevertError."""
    if hasattr(exc, "message_dict"):
        return [f"{msg}" for msgs in exc.message_dict.values() for msg in msgs]
    if hasattr(exc, "messages"):
        return list(exc.messages)
    return [str(exc) or "This action is not allowed."]


def decide(request, action, *, refused, done, then, prefix=""):
    """One reviewer decision (apply, reject, revert…) that ends back on a page.

    `action()` runs the service; an exception of the `refused` kinds becomes an error message (after
    `prefix`), success a success message (`done`, or `done(result)`). Either way the reviewer goes to
    `then`, as a client redirect when the request came from htmx.
    """
    try:
        result = action()
    except refused as exc:
        messages.error(request, prefix + " ".join(error_messages(exc)))
    else:
        messages.success(request, done(result) if callable(done) else done)
    return HttpResponseClientRedirect(then) if request.htmx else redirect(then)


def run_progress(request, template, context, *, finished):
    """A run's page. htmx polls it for the `run-body` partial; once the run has finished, the body is
    sent one last time with the signal that stops the polling."""
    if not request.htmx:
        return TemplateResponse(request, template, context)
    partial = f"{template}#run-body"
    if finished:
        return HttpResponseStopPolling(render_to_string(partial, context, request=request))
    return TemplateResponse(request, partial, context)


def bulk_selection(raw_ids, *, noun, limit=BULK_LIMIT):
    """The numbers a bulk form selected, once each in the order given. The limit counts what was asked
    for, before any number is set aside as unknown or not this person's to decide: otherwise unknown
    numbers would carry a request past it. Raises ValidationError (and nothing should change) when a
    value is not a number, nothing was selected, or more than `limit` were."""
    ids = [bounded_id(raw) for raw in raw_ids]
    if any(i is None for i in ids):
        raise ValidationError(f"the selection holds something that is not a {noun} number.")
    ids = list(dict.fromkeys(ids))
    if not ids:
        raise ValidationError(f"Select at least one {noun}.")
    if len(ids) > limit:
        raise ValidationError(f"Decide at most {limit} {noun}s at once; {len(ids)} were selected.")
    return ids


def none_to_decide(ids, *, noun):
    """The refusal when none of the selected numbers is this person's to decide: it names them (the
    first fifty), so the person sees what was asked rather than an empty selection."""
    shown = ", ".join(str(i) for i in ids[:50]) + (f" and {len(ids) - 50} more" if len(ids) > 50 else "")
    if len(ids) == 1:
        return ValidationError(f"{noun.capitalize()} {shown} does not exist or is not yours to decide.")
    return ValidationError(f"{noun.capitalize()}s {shown} do not exist or are not yours to decide.")
