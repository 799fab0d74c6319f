"""Small helpers the dashboard views share."""

from django.utils.http import url_has_allowed_host_and_scheme

from memory.services import Actor


def safe_next(request, default):
    """The `next` the form carried, when it points back into this site; else default."""
    target = request.POST.get("next") or request.GET.get("next")
    if target and url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()},
                                                  require_https=request.is_secure()):
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
