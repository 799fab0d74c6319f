"""The pages a sign-in ends on when it cannot go on: the provider unreachable, or the sign-in refused."""

from django.conf import settings
from django.template.response import TemplateResponse


def provider_unavailable(request):
    context = {"provider_name": settings.OIDC_PROVIDER_NAME, "local_login": settings.LOCAL_LOGIN}
    return TemplateResponse(request, "memory/sso/unavailable.html", context, status=503)


def sign_in_failed(request, message):
    context = {"message": message, "provider_name": settings.OIDC_PROVIDER_NAME}
    return TemplateResponse(request, "memory/sso/failed.html", context, status=400)
