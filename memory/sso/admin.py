"""Admin pages of single sign-on: the group mapping (editable), provider accounts and SCIM tokens."""

from django.contrib import admin
from django.utils import timezone

from memory.sso.models import IdpGroupMapping, IdpIdentity, ScimGroup, ScimToken
from personas.services import team_change_record


@admin.register(IdpGroupMapping)
class IdpGroupMappingAdmin(admin.ModelAdmin):
    list_display = ["group", "team", "role", "created_at"]
    list_filter = ["role", "team"]
    search_fields = ["group", "team__name"]
    list_select_related = ["team"]

    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        team_change_record(
            team=obj.team,
            action="group mapped",
            detail=f"Provider group “{obj.group}” gives {obj.role}",
            by=request.user,
        )

    def delete_model(self, request, obj):
        team_change_record(
            team=obj.team,
            action="group unmapped",
            detail=f"Provider group “{obj.group}” no longer maps here",
            by=request.user,
        )
        super().delete_model(request, obj)


@admin.register(IdpIdentity)
class IdpIdentityAdmin(admin.ModelAdmin):
    list_display = ["user", "issuer", "subject", "external_id", "updated_at"]
    search_fields = ["user__username", "user__email", "subject", "external_id"]
    readonly_fields = ["user", "issuer", "subject", "scim_id", "external_id", "groups", "scim_resource", "created_at"]
    exclude = ["scim_version"]

    def has_add_permission(self, request):
        return False


@admin.register(ScimGroup)
class ScimGroupAdmin(admin.ModelAdmin):
    list_display = ["display_name", "updated_at"]
    search_fields = ["display_name"]
    readonly_fields = ["id", "display_name", "members", "resource", "created_at"]
    exclude = ["version"]

    def has_add_permission(self, request):
        return False


@admin.register(ScimToken)
class ScimTokenAdmin(admin.ModelAdmin):
    list_display = ["name", "created_at", "last_used_at", "revoked_at"]
    readonly_fields = ["created_at", "last_used_at"]
    fields = ["name", "created_at", "last_used_at", "revoked_at"]
    actions = ["revoke"]

    def has_add_permission(self, request):
        return False  # manage.py create_scim_token shows the raw token once

    @admin.action(description="Revoke the selected tokens")
    def revoke(self, request, queryset):
        queryset.filter(revoked_at__isnull=True).update(revoked_at=timezone.now())
