"""Teams in the admin site: their memberships (with where each came from) and their history."""

from django.contrib import admin
from django.db import transaction
from django.db.models import Count

from memory.access import TeamScopedAdmin
from personas import services
from personas.models import Membership, Team, TeamChange


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 1
    fields = ["user", "role", "source", "created_at"]
    readonly_fields = ["source", "created_at"]

    def has_add_permission(self, request, obj=None):
        return self.has_change_permission(request, obj)

    def has_change_permission(self, request, obj=None):
        return self.admin_site._registry[Team].has_change_permission(request, obj)

    def has_delete_permission(self, request, obj=None):
        return self.has_change_permission(request, obj)

    def has_view_permission(self, request, obj=None):
        return self.admin_site._registry[Team].has_view_permission(request, obj)


class TeamChangeInline(admin.TabularInline):
    model = TeamChange
    fields = ["at", "by", "action", "detail"]
    readonly_fields = fields
    extra = 0
    can_delete = False
    verbose_name_plural = "history"

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_view_permission(self, request, obj=None):
        return self.admin_site._registry[Team].has_view_permission(request, obj)


@admin.register(Team)
class TeamAdmin(TeamScopedAdmin, admin.ModelAdmin):
    """Teams are made by a site administrator; a team's approvers add and remove its members. Projects
    and personas move between teams from their own pages (the Team field). Every change is kept in the
    team's history with who made it and when."""

    team_via, team_may_change = "id", True
    list_display = ["name", "slug", "member_count", "project_count", "persona_count", "created_at"]
    search_fields = ["name", "slug"]
    prepopulated_fields = {"slug": ["name"]}
    readonly_fields = ["projects_list", "personas_list", "created_at"]
    fields = ["name", "slug", "projects_list", "personas_list", "created_at"]
    inlines = [MembershipInline, TeamChangeInline]

    def get_queryset(self, request):
        return (
            super()
            .get_queryset(request)
            .annotate(
                n_members=Count("memberships", distinct=True),
                n_projects=Count("projects", distinct=True),
                n_personas=Count("personas", distinct=True),
            )
        )

    def get_readonly_fields(self, request, obj=None):
        fields = list(super().get_readonly_fields(request, obj))
        if not self._site_admin(request, "change"):
            fields += ["name", "slug"]  # a team's approvers manage its members, not its identity
        return fields

    def get_prepopulated_fields(self, request, obj=None):
        return {} if not self._site_admin(request, "change") else super().get_prepopulated_fields(request, obj)

    @admin.display(description="members", ordering="n_members")
    def member_count(self, obj):
        return obj.n_members

    @admin.display(description="projects", ordering="n_projects")
    def project_count(self, obj):
        return obj.n_projects

    @admin.display(description="personas", ordering="n_personas")
    def persona_count(self, obj):
        return obj.n_personas

    @admin.display(description="projects")
    def projects_list(self, obj):
        return ", ".join(p.name for p in obj.projects.order_by("name")) or "—" if obj.pk else "—"

    @admin.display(description="personas")
    def personas_list(self, obj):
        return ", ".join(p.name for p in obj.personas.order_by("name")) or "—" if obj.pk else "—"

    def save_model(self, request, obj, form, change):
        with transaction.atomic():
            old_name = form.initial.get("name") if change else None
            super().save_model(request, obj, form, change)
            if not change:
                services.team_change_record(
                    team=obj, action="team created", detail=f"Team “{obj.name}” created", by=request.user
                )
            elif "name" in form.changed_data:
                services.team_change_record(
                    team=obj,
                    action="team renamed",
                    detail=f"Renamed from “{old_name}” to “{obj.name}”",
                    by=request.user,
                )

    def save_formset(self, request, form, formset, change):
        if formset.model is not Membership:
            return super().save_formset(request, form, formset, change)
        with transaction.atomic():
            old_roles = {f.instance.pk: f.initial.get("role") for f in formset.initial_forms}
            instances = formset.save()
            removed = [(m.user, m.role) for m in formset.deleted_objects]
            added = list(formset.new_objects)
            changed = [(m, old_roles.get(m.pk)) for m, fields in formset.changed_objects if "role" in fields]
            services.team_memberships_changed(
                team=form.instance, added=added, changed=changed, removed=removed, by=request.user
            )
            return instances
