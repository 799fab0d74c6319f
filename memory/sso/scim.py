"""SCIM 2.0 (RFC 7643/7644) on scim2-server: the protocol (filters, PATCH with filtered paths, PUT, ETags,
discovery) is the library's; this module stores its Users and Groups in the database.

Resources are kept as the provider wrote them (never a password) and searched in Python, which suits the
few hundred people an organisation provisions; their effects on accounts and teams are in provisioning.py.
"""

import json
import uuid
from typing import Any, Union

from django.conf import settings
from django.db import transaction
from scim2_models import (
    NotFoundException,
    PreconditionFailedException,
    Resource,
    ResourceType,
    ScimFilter,
    ScimProvider,
    SearchRequest,
    UnauthorizedException,
    UniquenessException,
)
from scim2_server.applications.wsgi import WSGIApplication
from scim2_server.memory import _page
from scim2_server.requests import ScimRequest
from scim2_server.service import ScimService
from scim2_server.storage import ScimStorage
from scim2_server.testserver.application import BEARER_TOKEN_SCHEME
from scim2_server.utils import (
    load_default_resource_types,
    load_default_schemas,
    load_default_service_provider_config,
    parametrize,
)

from memory.sso import provisioning
from memory.sso.models import IdpIdentity, ScimGroup
from memory.sso.services import scim_token_check


def _clean(resource: Resource[Any]) -> dict[str, Any]:
    data = resource.model_dump(mode="json")
    for key in ("password", "id", "meta", "groups"):
        data.pop(key, None)
    return data


class DatabaseStorage(ScimStorage):
    """Users on IdpIdentity (an account each), Groups on ScimGroup."""

    def __init__(self, provider: ScimProvider):
        self.provider = provider

    def operation(self):
        return transaction.atomic()

    # --- reading ------------------------------------------------------------------------------------

    def _user(self, identity: IdpIdentity) -> Resource[Any]:
        data = dict(identity.scim_resource or {})
        data["id"] = str(identity.scim_id)
        data["groups"] = [
            {"value": str(g.pk), "display": g.display_name, "$ref": f"Groups/{g.pk}"}
            for g in identity.user.scim_groups.all()
        ] or None
        data["meta"] = self._meta("User", identity.created_at, identity.updated_at, identity.scim_version)
        if not data["groups"]:
            del data["groups"]
        return self.provider.model_for("User").model_validate(data)

    def _group(self, group: ScimGroup) -> Resource[Any]:
        data = dict(group.resource or {})
        data["id"] = str(group.pk)
        data["meta"] = self._meta("Group", group.created_at, group.updated_at, group.version)
        return self.provider.model_for("Group").model_validate(data)

    @staticmethod
    def _meta(kind, created, modified, version):
        return {
            "resourceType": kind,
            "created": created.isoformat(),
            "lastModified": modified.isoformat(),
            "version": f'W/"{version}"',
        }

    def _users(self):
        return IdpIdentity.objects.filter(scim_resource__isnull=False).select_related("user")

    def _stored_user(self, resource_id: str) -> IdpIdentity:
        try:
            return self._users().get(scim_id=uuid.UUID(resource_id))
        except (ValueError, IdpIdentity.DoesNotExist):
            raise NotFoundException(detail=f"No user {resource_id}") from None

    def _stored_group(self, resource_id: str) -> ScimGroup:
        try:
            return ScimGroup.objects.get(pk=uuid.UUID(resource_id))
        except (ValueError, ScimGroup.DoesNotExist):
            raise NotFoundException(detail=f"No group {resource_id}") from None

    def get(self, resource_type: ResourceType, resource_id: str, *, response_parameters: Any = None):
        if resource_type.name == "User":
            return self._user(self._stored_user(resource_id))
        return self._group(self._stored_group(resource_id))

    def search(self, resource_types: list[ResourceType], search_request: SearchRequest[Any], *, position=None):
        names = {rt.name for rt in resource_types}
        found: list[Resource[Any]] = []
        if "User" in names:
            found += [self._user(i) for i in self._users().prefetch_related("user__scim_groups")]
        if "Group" in names:
            found += [self._group(g) for g in ScimGroup.objects.all()]
        scim_filter = search_request.filter
        if scim_filter is not None and not scim_filter.models and found:
            models = tuple(dict.fromkeys(type(r) for r in found))
            scim_filter = parametrize(ScimFilter, Union[models])(str(scim_filter))  # noqa: UP007
        found = [r for r in found if scim_filter is None or scim_filter.match(r)]
        return _page(search_request, position, found)

    # --- writing ------------------------------------------------------------------------------------

    @staticmethod
    def _check_version(version: int, expected: str | None) -> None:
        if expected is not None and expected != f'W/"{version}"':
            raise PreconditionFailedException()

    def create(self, resource_type: ResourceType, resource: Resource[Any]) -> Resource[Any]:
        data = _clean(resource)
        if resource_type.name == "User":
            try:
                identity = provisioning.scim_user_create(data=data)
            except provisioning.UserNameTaken:
                raise UniquenessException(detail="userName is already taken") from None
            return self._user(identity)
        return self._group(provisioning.scim_group_save(group=None, data=data))

    def update(self, resource_type: ResourceType, resource: Resource[Any], *, expected_version=None):
        data = _clean(resource)
        if resource_type.name == "User":
            identity = self._stored_user(str(resource.id))
            self._check_version(identity.scim_version, expected_version)
            try:
                identity = provisioning.scim_user_update(identity=identity, data=data)
            except provisioning.UserNameTaken:
                raise UniquenessException(detail="userName is already taken") from None
            return self._user(identity)
        group = self._stored_group(str(resource.id))
        self._check_version(group.version, expected_version)
        return self._group(provisioning.scim_group_save(group=group, data=data))

    def delete(self, resource_type: ResourceType, resource_id: str, *, expected_version=None) -> None:
        if resource_type.name == "User":
            identity = self._stored_user(resource_id)
            self._check_version(identity.scim_version, expected_version)
            provisioning.scim_user_delete(identity=identity)
        else:
            group = self._stored_group(resource_id)
            self._check_version(group.version, expected_version)
            provisioning.scim_group_delete(group=group)


def build_provider() -> ScimProvider:
    config = load_default_service_provider_config()
    config.bulk.supported = False
    config.change_password.supported = False
    config.authentication_schemes = [BEARER_TOKEN_SCHEME]
    return ScimProvider.from_discovery(
        load_default_schemas().values(), load_default_resource_types().values(), config=config
    )


class DjangoScimApplication(WSGIApplication):
    """The library's application, fed Django requests; every endpoint needs a SCIM token."""

    def needs_auth(self, request: ScimRequest) -> bool:
        return True

    def check_auth(self, request: ScimRequest) -> None:
        scheme, _, token = (request.header("Authorization") or "").partition(" ")
        if scheme.lower() != "bearer" or not token.strip() or scim_token_check(token.strip()) is None:
            raise UnauthorizedException(detail="A SCIM bearer token is required (manage.py create_scim_token)")


_app: DjangoScimApplication | None = None


def application() -> DjangoScimApplication:
    global _app
    if _app is None:
        provider = build_provider()
        service = ScimService(provider, secret=settings.SECRET_KEY)
        _app = DjangoScimApplication(DatabaseStorage(provider), provider, service)
    return _app


def serve(*, method: str, base_url: str, path: str, query: dict, headers: dict, body: bytes):
    """One SCIM request; returns (status, body or None, headers)."""
    app = application()
    request = ScimRequest(method=method, base_url=base_url, path=path, query=query, headers=headers, body=body)
    response = app.serve(request)
    payload = None if response.body is None else json.dumps(response.body)
    return int(response.status), payload, dict(response.headers)
