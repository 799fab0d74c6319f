"""What single sign-on keeps: the group mapping, the link between a person and the provider, SCIM groups
and the tokens SCIM clients present."""

import hashlib
import uuid

from django.conf import settings
from django.db import models
from django.utils import timezone

from personas.models import Role, Team

__all__ = ["IdpGroupMapping", "IdpIdentity", "ScimGroup", "ScimToken"]


class IdpGroupMapping(models.Model):
    """A provider group gives its members one role in one team (at every sign-in and SCIM push)."""

    group = models.CharField(max_length=255, help_text="The group's name exactly as the provider sends it.")
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="idp_group_mappings")
    role = models.CharField(max_length=20, choices=Role.choices, default=Role.VIEWER)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["group", "team__name"]
        verbose_name = "identity provider group mapping"
        constraints = [models.UniqueConstraint(fields=["group", "team"], name="one_mapping_per_group_and_team")]

    def __str__(self):
        return f"{self.group} → {self.get_role_display().lower()} of {self.team}"


class IdpIdentity(models.Model):
    """A person known to the identity provider: by the OIDC subject once they signed in, by the SCIM id once
    the provider provisioned them."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="idp_identity")
    issuer = models.CharField(max_length=500, blank=True)
    # NULL (not ""): people provisioned by SCIM before their first sign-in must not collide in the constraint.
    subject = models.CharField(max_length=255, null=True, blank=True)  # noqa: DJ001
    scim_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    external_id = models.CharField(max_length=255, blank=True)
    # The groups the provider last said the person is in (sign-in or SCIM), by name.
    groups = models.JSONField(default=list, blank=True)
    # The SCIM User resource as the provider last wrote it (never a password); None: not provisioned by SCIM.
    scim_resource = models.JSONField(null=True, blank=True)
    scim_version = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "identity provider account"
        constraints = [models.UniqueConstraint(fields=["issuer", "subject"], name="one_user_per_idp_subject")]

    def __str__(self):
        return f"{self.user} at {self.issuer or 'SCIM'}"


class ScimGroup(models.Model):
    """A group the provider pushes over SCIM; its name is what the group mapping matches."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    display_name = models.CharField(max_length=255, db_index=True)
    members = models.ManyToManyField(settings.AUTH_USER_MODEL, blank=True, related_name="scim_groups")
    # The SCIM Group resource as the provider last wrote it, members included.
    resource = models.JSONField(default=dict, blank=True)
    version = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["display_name"]
        verbose_name = "SCIM group"

    def __str__(self):
        return self.display_name


def scim_token_digest(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


class ScimToken(models.Model):
    """A bearer token a SCIM client presents; only its digest is kept."""

    name = models.CharField(max_length=100)
    digest = models.CharField(max_length=64, unique=True, editable=False)
    created_at = models.DateTimeField(default=timezone.now)
    revoked_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name = "SCIM token"

    def __str__(self):
        return self.name
