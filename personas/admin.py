"""Personas and projects in the admin site.

Deleting a persona here archives it (its memory stays and comes back on restore). Removing it for
good is a separate page that asks for the persona's name to be typed.
"""

from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.db import models, transaction
from django.db.models import Count, Q, Sum
from django.http import Http404, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html
from django.views.decorators.http import require_POST

from memory.access import PERSONA, PROJECT, TeamScopedAdmin
from memory.listing import PageCountsAdminMixin, grouped_counts
from memory.models import LessonStatus, Memory, Tier
from personas import services
from personas.forms import PersonaForm
from personas.models import Persona, PersonaAlias, Project

admin.site.site_header = "Night Watch Memory administration"
admin.site.site_title = "Night Watch Memory admin"
admin.site.index_title = "Personas, projects and memory"

SEED_ACTION = "seed_default_personas"
URL_FIELDS = {models.URLField: {"assume_scheme": "https"}}


def _active_lessons(prefix, tier):
    return Q(**{f"{prefix}lessons__tier": tier, f"{prefix}lessons__status": LessonStatus.ACTIVE})


class ArchiveStateFilter(admin.SimpleListFilter):
    """Archived personas are hidden unless asked for, like everywhere else in the product."""

    title = "state"
    parameter_name = "state"

    def lookups(self, request, model_admin):
        return [("archived", "Archived"), ("all", "All")]

    def choices(self, changelist):
        yield {
            "selected": self.value() is None,
            "query_string": changelist.get_query_string(remove=[self.parameter_name]),
            "display": "Not archived",
        }
        for value, label in self.lookup_choices:
            yield {
                "selected": self.value() == value,
                "query_string": changelist.get_query_string({self.parameter_name: value}),
                "display": label,
            }

    def queryset(self, request, queryset):
        if self.value() == "archived":
            return queryset.filter(archived_at__isnull=False)
        if self.value() == "all":
            return queryset
        return queryset.filter(archived_at__isnull=True)


class MemoryInline(admin.TabularInline):
    model = Memory
    extra = 0
    can_delete = False
    show_change_link = True
    fields = ["project", "core_lessons", "working_lessons", "version", "last_reflected_at", "last_compacted_at"]
    readonly_fields = fields
    verbose_name_plural = "Memories (one per project)"

    def get_queryset(self, request):
        return (
            super()
            .get_queryset(request)
            .select_related("project")
            .annotate(
                n_core=Count("lessons", filter=_active_lessons("", Tier.CORE)),
                n_working=Count("lessons", filter=_active_lessons("", Tier.WORKING)),
            )
        )

    def has_add_permission(self, request, obj=None):
        return False

    @admin.display(description="core")
    def core_lessons(self, obj):
        return obj.n_core

    @admin.display(description="working")
    def working_lessons(self, obj):
        return obj.n_working


@admin.register(PersonaAlias)
class PersonaAliasAdmin(admin.ModelAdmin):
    """Old names come from renames; deleting one frees the name (agents still using it then get 404)."""

    list_display = ["name", "persona", "created_at"]
    list_filter = ["persona"]
    search_fields = ["name", "persona__name"]
    list_select_related = ["persona"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


def _memory_totals(key, rows):
    """{persona or project id: (active core lessons, active working lessons, memories)} of the page's
    rows, `key` naming the memory's field ("persona_id", "project_id"): one grouped query over the
    lesson counts each memory keeps (recounted by every write), never over the lessons."""
    totals = grouped_counts(
        Memory.objects.filter(**{f"{key}__in": [r.pk for r in rows]}),
        key,
        core=Sum("active_core_lessons"),
        working=Sum("active_working_lessons"),
        memories=Count("id"),
    )
    return {pk: (t["core"] or 0, t["working"] or 0, t["memories"]) for pk, t in totals.items()}


@admin.register(Persona)
class PersonaAdmin(TeamScopedAdmin, PageCountsAdminMixin, admin.ModelAdmin):
    team_via, team_may_add, team_may_change = PERSONA, True, True
    form = PersonaForm
    formfield_overrides = URL_FIELDS
    list_display = ["name", "role", "state", "core_lessons", "working_lessons", "project_count", "provider_label"]
    list_display_links = ["name"]
    list_filter = [ArchiveStateFilter, "team", "is_active", "provider"]
    search_fields = ["name", "role"]
    ordering = ["name"]
    actions = ["archive_selected", "restore_selected", SEED_ACTION]
    inlines = [MemoryInline]
    readonly_fields = ["old_names", "archived_at", "created_at", "updated_at"]
    fieldsets = [
        (None, {"fields": ["name", "old_names", "role", "avatar", "team", "is_active", "archived_at"]}),
        ("Soul", {"fields": ["soul"], "description": "Who the persona is: identity, worldview, opinions, limits."}),
        ("Style", {"fields": ["style"], "description": "How the persona speaks."}),
        ("Skill", {"fields": ["skill"], "description": "How the persona works: modes and standing instructions."}),
        (
            "Model",
            {"fields": ["provider", "model_name", "max_tokens", "temperature", "base_url", "detection_token_budget"]},
        ),
        (
            "Prompts",
            {
                "classes": ["collapse"],
                "fields": ["system_prompt_override", "reflection_prompt", "refinement_prompt", "refinement_threshold"],
            },
        ),
        ("Timestamps", {"classes": ["collapse"], "fields": ["created_at", "updated_at"]}),
    ]

    def get_form(self, request, obj=None, change=False, **kwargs):
        form = super().get_form(request, obj, change=change, **kwargs)
        if obj is not None:
            form.base_fields["name"].help_text = services.RENAME_EFFECT
        form.base_fields["refinement_prompt"].help_text = (
            "Blank: the conservative default. Every edit is saved as a new version of the prompt (see its history "
            "on the refinement prompt page), the same as an edit there."
        )
        return form

    def save_model(self, request, obj, form, change):
        """Renames and refinement-prompt edits go through the services that give them their effects."""
        from memory.refinement.services import refinement_prompt_save

        old_name = form.initial.get("name", obj.name) if change else obj.name
        old_prompt = (form.initial.get("refinement_prompt") or "") if change else ""
        new_prompt = obj.refinement_prompt
        prompt_changed = new_prompt != old_prompt.strip()
        obj.refinement_prompt = old_prompt  # written below as a version, never straight into the persona
        with transaction.atomic():
            super().save_model(request, obj, form, change)
            if "team" in form.changed_data:
                services.team_owner_moved(obj=obj, old_team_id=form.initial.get("team"), by=request.user)
            if change and "name" in form.changed_data:
                services.persona_renamed(persona=obj, old_name=old_name)
            if prompt_changed:
                refinement_prompt_save(persona=obj, text=new_prompt, user=request.user, note="edited in the admin")
                obj.refresh_from_db(fields=["refinement_prompt"])

    def page_counts(self, rows):
        totals = _memory_totals("persona_id", rows)
        for persona in rows:
            persona.n_core, persona.n_working, persona.n_projects = totals.get(persona.pk, (0, 0, 0))

    # --- columns ---------------------------------------------------------------------------

    @admin.display(description="old names")
    def old_names(self, obj):
        names = [a.name for a in obj.aliases.all()] if obj.pk else []
        if not names:
            return "— (a rename keeps the old name here, so agents still using it keep working)"
        link = reverse("admin:personas_personaalias_changelist") + f"?persona__id__exact={obj.pk}"
        return format_html('{} · <a href="{}">manage</a>', ", ".join(names), link)

    @admin.display(description="state", ordering="archived_at")
    def state(self, obj):
        if obj.archived_at:
            return format_html('<span title="archived {}">Archived</span>', obj.archived_at.date())
        return "Active" if obj.is_active else "Inactive"

    @admin.display(description="core lessons")
    def core_lessons(self, obj):
        return obj.n_core

    @admin.display(description="working lessons")
    def working_lessons(self, obj):
        return obj.n_working

    @admin.display(description="projects")
    def project_count(self, obj):
        return obj.n_projects

    @admin.display(description="provider", ordering="provider")
    def provider_label(self, obj):
        return obj.get_provider_display()

    # --- actions ---------------------------------------------------------------------------

    def get_actions(self, request):
        actions = super().get_actions(request)
        # The stock bulk delete would remove memory for good; "archive" replaces it.
        actions.pop("delete_selected", None)
        return actions

    @admin.action(description="Archive selected personas (memory is kept)", permissions=["change"])
    def archive_selected(self, request, queryset):
        names = [self._archive(request, p).name for p in queryset.filter(archived_at__isnull=True)]
        self.message_user(
            request,
            f"Archived {len(names)} persona(s): {', '.join(names) or 'none'}. "
            "Their memory is kept; restore them any time.",
            messages.SUCCESS,
        )

    @admin.action(description="Restore selected archived personas", permissions=["change"])
    def restore_selected(self, request, queryset):
        names = [self._restore(request, p).name for p in queryset.filter(archived_at__isnull=False)]
        self.message_user(request, f"Restored {len(names)} persona(s): {', '.join(names) or 'none'}.", messages.SUCCESS)

    @admin.action(description="Seed the four default personas (skips existing names)", permissions=["add"])
    def seed_default_personas(self, request, queryset=None):
        created, skipped = services.personas_seed_defaults()
        for persona in Persona.objects.filter(name__in=created):
            self.log_addition(request, persona, "Created as a default persona")
        if created:
            msg = f"Created {len(created)} default persona(s): {', '.join(created)}."
        else:
            msg = "All default personas already exist; nothing was created."
        if skipped:
            msg += f" Left unchanged: {', '.join(skipped)}."
        self.message_user(request, msg, messages.SUCCESS)

    def changelist_view(self, request, extra_context=None):
        # Seeding does not act on a selection: let it run with nothing ticked (Django's action
        # machinery would refuse an empty selection).
        if (
            request.method == "POST"
            and request.POST.get("action") == SEED_ACTION
            and not request.POST.getlist(admin.helpers.ACTION_CHECKBOX_NAME)
        ):
            return self.seed_defaults_view(request)
        return super().changelist_view(request, extra_context)

    # --- archive instead of delete ---------------------------------------------------------

    def _archive(self, request, persona):
        persona = services.persona_archive(persona=persona)
        self.log_change(request, persona, "Archived (memory kept)")
        return persona

    def _restore(self, request, persona):
        persona = services.persona_restore(persona=persona)
        self.log_change(request, persona, "Restored from the archive")
        return persona

    def delete_model(self, request, obj):
        self._archive(request, obj)

    def delete_queryset(self, request, queryset):
        for persona in queryset:
            self._archive(request, persona)

    def delete_view(self, request, object_id, extra_context=None):
        """The admin's Delete button: confirm, then archive. Nothing is removed."""
        persona = self._persona_or_404(request, object_id)
        if not self.has_delete_permission(request, persona):
            raise PermissionDenied
        if request.method == "POST":
            self._archive(request, persona)
            self.message_user(
                request, f"Archived “{persona.name}”. Its memory is kept; restore it any time.", messages.SUCCESS
            )
            return HttpResponseRedirect(reverse("admin:personas_persona_changelist"))
        return self._confirm_page(
            request,
            persona,
            title=f"Archive {persona.name}?",
            body="Archiving hides the persona from active lists. Its memory of every project is kept "
            "and comes back unchanged when you restore it.",
            button="Yes, archive",
        )

    # --- extra pages -----------------------------------------------------------------------

    def get_urls(self):
        wrap = self.admin_site.admin_view
        return [
            path("seed-defaults/", wrap(require_POST(self.seed_defaults_view)), name="personas_persona_seed"),
            path("<path:object_id>/preview/", wrap(self.preview_view), name="personas_persona_preview"),
            path("<path:object_id>/restore/", wrap(self.restore_view), name="personas_persona_restore"),
            path("<path:object_id>/hard-delete/", wrap(self.hard_delete_view), name="personas_persona_hard_delete"),
            *super().get_urls(),
        ]

    def _persona_or_404(self, request, object_id):
        persona = self.get_object(request, unquote(object_id))
        if persona is None:
            raise Http404("No such persona.")
        return persona

    def _context(self, request, persona, **extra):
        return {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "original": persona,
            "has_view_permission": self.has_view_permission(request, persona),
            **extra,
        }

    def _confirm_page(self, request, persona, *, title, body, button, danger=False):
        return TemplateResponse(
            request,
            "admin/personas/persona/confirm_action.html",
            self._context(request, persona, title=title, body=body, button=button, danger=danger),
        )

    def seed_defaults_view(self, request):
        if not self.has_add_permission(request):
            raise PermissionDenied
        self.seed_default_personas(request)
        return HttpResponseRedirect(reverse("admin:personas_persona_changelist"))

    def restore_view(self, request, object_id):
        persona = self._persona_or_404(request, object_id)
        if not self.has_change_permission(request, persona):
            raise PermissionDenied
        if request.method == "POST":
            self._restore(request, persona)
            self.message_user(request, f"Restored “{persona.name}” with its memory.", messages.SUCCESS)
            return HttpResponseRedirect(reverse("admin:personas_persona_change", args=[persona.pk]))
        return self._confirm_page(
            request,
            persona,
            title=f"Restore {persona.name}?",
            body="The persona returns to active lists with all of its memory.",
            button="Yes, restore",
        )

    def hard_delete_view(self, request, object_id):
        persona = self._persona_or_404(request, object_id)
        if not (request.user.is_superuser and self.has_delete_permission(request, persona)):
            raise PermissionDenied
        memories = Memory.objects.filter(persona=persona)
        counts = memories.aggregate(
            n_memories=Count("id", distinct=True),
            n_lessons=Count("lessons"),
        )
        error = None
        if request.method == "POST":
            try:
                with transaction.atomic():  # the log entry goes only if the delete does
                    self.log_deletions(request, Persona.objects.filter(pk=persona.pk))
                    name = services.persona_hard_delete(
                        persona=persona, confirm_name=request.POST.get("confirm_name", "")
                    )
            except services.HardDeleteRefused as exc:
                error = str(exc)
            else:
                self.message_user(request, f"Deleted “{name}” and its memory permanently.", messages.SUCCESS)
                return HttpResponseRedirect(reverse("admin:personas_persona_changelist"))
        return TemplateResponse(
            request,
            "admin/personas/persona/hard_delete.html",
            self._context(request, persona, title=f"Delete {persona.name} permanently", error=error, **counts),
            status=400 if error else 200,
        )

    def preview_view(self, request, object_id):
        """The system prompt an agent of this persona receives for one project, memory included."""
        from memory.selectors import compile_memory, memory_for
        from personas.compiler import compile_system_prompt, compile_system_prompt_for

        persona = self._persona_or_404(request, object_id)
        if not self.has_view_permission(request, persona):
            raise PermissionDenied
        projects = list(
            Project.objects.annotate(has_memory=Count("memories", filter=Q(memories__persona=persona))).order_by(
                "-has_memory", "name"
            )
        )
        chosen = request.GET.get("project", "")
        if chosen:
            project = next((p for p in projects if str(p.pk) == chosen), None)
            if project is None:
                raise Http404("No such project.")
        else:
            project = projects[0] if projects else None
        prompt, compiled = compile_system_prompt(persona, ""), None
        if project is not None:
            prompt = compile_system_prompt_for(persona, project)
            memory = memory_for(persona, project)
            compiled = compile_memory(memory) if memory else None
        return TemplateResponse(
            request,
            "admin/personas/persona/preview.html",
            self._context(
                request,
                persona,
                title=f"System prompt of {persona.name}",
                projects=projects,
                project=project,
                prompt=prompt,
                compiled=compiled,
            ),
        )


@admin.register(Project)
class ProjectAdmin(TeamScopedAdmin, PageCountsAdminMixin, admin.ModelAdmin):
    team_via, team_may_add, team_may_change = PROJECT, True, True

    list_display = [
        "name",
        "slug",
        "team",
        "repository_link",
        "repository_ref",
        "memory_count",
        "lesson_count",
        "created_at",
    ]
    list_filter = ["team"]
    search_fields = ["name", "slug", "repository_url"]
    prepopulated_fields = {"slug": ["name"]}
    formfield_overrides = URL_FIELDS
    ordering = ["name"]

    def page_counts(self, rows):
        totals = _memory_totals("project_id", rows)
        for project in rows:
            core, working, project.n_memories = totals.get(project.pk, (0, 0, 0))
            project.n_lessons = core + working

    def get_actions(self, request):
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)
        return actions

    def save_model(self, request, obj, form, change):
        with transaction.atomic():
            super().save_model(request, obj, form, change)
            if "team" in form.changed_data:
                services.team_owner_moved(obj=obj, old_team_id=form.initial.get("team"), by=request.user)

    def has_delete_permission(self, request, obj=None):
        # Deleting a project would take every persona's memory of it along; only empty projects go.
        if obj is not None and Memory.objects.filter(project=obj).exists():
            return False
        return super().has_delete_permission(request, obj)

    @admin.display(description="repository", ordering="repository_url")
    def repository_link(self, obj):
        if not obj.repository_url:
            return "—"
        return format_html('<a href="{}" rel="noopener noreferrer">{}</a>', obj.repository_url, obj.repository_url)

    @admin.display(description="memories")
    def memory_count(self, obj):
        return obj.n_memories

    @admin.display(description="active lessons")
    def lesson_count(self, obj):
        return obj.n_lessons


# Teams, their memberships and their history: personas/team_admin.py.
from personas import team_admin  # noqa: E402, F401
