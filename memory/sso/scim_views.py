"""/scim/v2/…: the SCIM endpoints, for the identity provider only (a bearer token from create_scim_token)."""

from django.db import transaction
from django.http import HttpResponse
from django.views.decorators.csrf import csrf_exempt

from memory.sso import scim


@csrf_exempt
def scim_endpoint(request, path=""):
    base_url = request.build_absolute_uri("/scim/v2").rstrip("/")
    with transaction.atomic():
        status, payload, headers = scim.serve(
            method=request.method,
            base_url=base_url,
            path="/" + path.removesuffix(".scim"),
            query=request.GET.dict(),
            headers=dict(request.headers),
            body=request.body,
        )
    response = HttpResponse(payload or b"", status=status, content_type=headers.pop("Content-Type", None))
    for name, value in headers.items():
        response[name] = value
    return response
