"""SCIM provisioning's writes: the provider's User and Group resources kept as it wrote them, and turned into
accounts (name, email, active) and, through the group mapping, team memberships of source SCIM."""

import uuid
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractUser
from django.db import transaction

from memory.sso.models import IdpIdentity, ScimGroup
from memory.sso.services import memberships_sync
from personas.models import MembershipSource


class UserNameTaken(Exception):
    pass


def _account_fields(data: dict[str, Any]) -> dict[str, Any]:
    emails = data.get("emails") or []
    primary = next((e for e in emails if e.get("primary")), emails[0] if emails else {})
    name = data.get("name") or {}
    return {
        "email": (primary.get("value") or "")[:254],
        "first_name": (name.get("givenName") or "")[:150],
        "last_name": (name.get("familyName") or "")[:150],
        "is_active": data.get("active", True) is not False,
    }


@transaction.atomic
def scim_user_create(*, data: dict[str, Any]) -> IdpIdentity:
    """A person the provider provisions. An account of the same user name that SCIM does not hold yet (one made
    by a sign-in, or by hand) is taken over, unless it is a superuser's: the break-glass accounts stay local."""
    User = get_user_model()
    user = User.objects.filter(username__iexact=data["userName"]).first()
    identity = IdpIdentity.objects.filter(user=user).first() if user else None
    if user is not None and (user.is_superuser or (identity is not None and identity.scim_resource is not None)):
        raise UserNameTaken(data["userName"])
    fields = _account_fields(data)
    if user is None:
        user = User(username=data["userName"][:150])
        user.set_unusable_password()
    for name, value in fields.items():
        setattr(user, name, value)
    user.save()
    if identity is None:
        identity = IdpIdentity(user=user)
    identity.external_id = (data.get("externalId") or "")[:255]
    identity.scim_resource = data
    identity.scim_version += 1
    identity.save()
    return identity


@transaction.atomic
def scim_user_update(*, identity: IdpIdentity, data: dict[str, Any]) -> IdpIdentity:
    """The provider replaced (PUT) or patched a person. `active: false` ends their sessions at their next
    request: a deactivated account is no longer found for any session."""
    User = get_user_model()
    user: AbstractUser = identity.user
    if User.objects.filter(username__iexact=data["userName"]).exclude(pk=user.pk).exists():
        raise UserNameTaken(data["userName"])
    user.username = data["userName"][:150]
    for name, value in _account_fields(data).items():
        setattr(user, name, value)
    user.save()
    identity.external_id = (data.get("externalId") or "")[:255]
    identity.scim_resource = data
    identity.scim_version += 1
    identity.save()
    return identity


@transaction.atomic
def scim_user_delete(*, identity: IdpIdentity) -> None:
    """The provider deleted a person: the account is deactivated (its history keeps its name), leaves its SCIM
    groups and loses the memberships SCIM gave."""
    user = identity.user
    user.is_active = False
    user.save(update_fields=["is_active"])
    user.scim_groups.clear()
    memberships_sync(user=user, groups=[], source=MembershipSource.SCIM)
    identity.scim_resource = None
    identity.scim_version += 1
    identity.save()


def _member_users(data: dict[str, Any]):
    ids = []
    for member in data.get("members") or []:
        try:
            ids.append(uuid.UUID(str(member.get("value"))))
        except ValueError:
            continue
    return list(
        get_user_model().objects.filter(idp_identity__scim_id__in=ids, idp_identity__scim_resource__isnull=False)
    )


def _resync(users) -> None:
    for user in users:
        names = list(user.scim_groups.values_list("display_name", flat=True))
        memberships_sync(user=user, groups=names, source=MembershipSource.SCIM)


@transaction.atomic
def scim_group_save(*, group: ScimGroup | None, data: dict[str, Any]) -> ScimGroup:
    """A group created, replaced or patched: its members' team roles follow at once (their next request)."""
    if group is None:
        group = ScimGroup(id=uuid.uuid4())
        before = set()
    else:
        before = set(group.members.all())
    group.display_name = data.get("displayName") or ""
    group.resource = data
    group.version += 1
    group.save()
    after = set(_member_users(data))
    group.members.set(after)
    _resync(before | after)
    return group


@transaction.atomic
def scim_group_delete(*, group: ScimGroup) -> None:
    members = set(group.members.all())
    group.delete()
    _resync(members)
