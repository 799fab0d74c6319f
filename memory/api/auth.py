"""The API's gate: the body size first (nothing is parsed past the limit), then the bearer token."""

from datetime import timedelta

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.utils import timezone
from ninja.security import HttpBearer

from memory.models import AgentToken
from memory.tokens import agent_token_authenticate

# Recording every use would turn each read into a write; once a minute is precise enough.
LAST_USED_PRECISION = timedelta(minutes=1)


def agent_token_for_bearer(raw):
    """The live token for a bearer value (noting when it was last used), or None."""
    agent_token = agent_token_authenticate(raw)
    if agent_token is None:
        return None
    now = timezone.now()
    if agent_token.last_used_at is None or now - agent_token.last_used_at > LAST_USED_PRECISION:
        AgentToken.objects.filter(pk=agent_token.id).update(last_used_at=now)
    return agent_token


class PayloadTooLarge(Exception):
    def __init__(self, size=None):
        self.size = size


def check_body_size(request):
    if request.method not in ("POST", "PUT", "PATCH"):
        return
    limit = settings.API_MAX_BODY_BYTES
    try:
        declared = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        declared = 0
    if declared > limit:
        raise PayloadTooLarge(declared)
    try:
        body = request.body  # bounded by DATA_UPLOAD_MAX_MEMORY_SIZE for bodies without a length
    except RequestDataTooBig:
        raise PayloadTooLarge() from None
    if len(body) > limit:
        raise PayloadTooLarge(len(body))


class AgentTokenAuth(HttpBearer):
    openapi_description = "An agent token created with `manage.py create_agent_token`."

    def __call__(self, request):
        check_body_size(request)
        return super().__call__(request)

    def authenticate(self, request, token):
        agent_token = agent_token_for_bearer(token)
        request.agent_token = agent_token
        return agent_token
