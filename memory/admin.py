"""Memory in the admin site: read-mostly. Lesson text only changes through the services (and the
dashboard), so every change leaves history; the admin offers the few curation actions that are safe
in bulk, each grouped into one revertible batch per memory."""

import unicodedata
from collections import defaultdict

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import Count, Prefetch, Q
from django.urls import reverse
from django.utils.html import format_html, format_html_join

from memory import services
from memory.access import CURATE, VIEW, TeamScopedAdmin, llm_call_teams
from memory.listing import PageCountsAdminMixin, grouped_counts
from memory.models import (
    AgentToken,
    Change,
    ChangeBatch,
    DetectionRun,
    Interaction,
    Lesson,
    LessonConfirmation,
    LessonRef,
    LessonStatus,
    LLMCall,
    Memory,
    Tier,
)


def reveal_invisible(text):
    """Escaped HTML for lesson text with invisible and bidi control characters shown as visible codes,
    so a reviewer sees exactly what an agent will read."""
    parts, plain = [], []
    for ch in text:
        if unicodedata.category(ch) in ("Cf", "Cc"):
            if plain:
                parts.append(("{}", "".join(plain)))
                plain = []
            parts.append(('<mark title="invisible character">⟦U+{}⟧</mark>', f"{ord(ch):04X}"))
        else:
            plain.append(ch)
    if plain:
        parts.append(("{}", "".join(plain)))
    return format_html_join("", "{}", ((format_html(fmt, arg),) for fmt, arg in parts))


class ReadOnlyMixin:
    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


def _active(prefix, tier):
    return Q(**{f"{prefix}tier": tier, f"{prefix}status": LessonStatus.ACTIVE})


@admin.register(Memory)
class MemoryAdmin(TeamScopedAdmin, PageCountsAdminMixin, admin.ModelAdmin):
    team_via, team_action = "project__team", VIEW
    list_display = [
        "__str__",
        "persona",
        "project",
        "core_lessons",
        "working_lessons",
        "version",
        "last_reflected_at",
        "last_compacted_at",
        "last_refined_at",
    ]
    list_filter = ["persona", "project"]
    list_select_related = ["persona", "project"]
    search_fields = ["persona__name", "project__name", "project__slug"]
    readonly_fields = [
        "version",
        "created_at",
        "last_reflected_at",
        "last_compacted_at",
        "last_refined_at",
        "lessons_link",
        "compiled_preview",
    ]
    fieldsets = [
        (None, {"fields": ["persona", "project", "lessons_link"]}),
        (
            "Budgets and thresholds",
            {
                "fields": [
                    "core_char_budget",
                    "working_char_budget",
                    "max_working_lines",
                    "compaction_target_lines",
                    "promotion_threshold",
                    "reflections_to_core",
                ]
            },
        ),
        ("State", {"fields": ["version", "created_at", "last_reflected_at", "last_compacted_at", "last_refined_at"]}),
        ("Compiled memory", {"fields": ["compiled_preview"]}),
    ]

    def page_counts(self, rows):
        counts = grouped_counts(
            Lesson.objects.filter(memory_id__in=[m.pk for m in rows]),
            "memory_id",
            n_core=Count("id", filter=_active("", Tier.CORE)),
            n_working=Count("id", filter=_active("", Tier.WORKING)),
        )
        for memory in rows:
            memory.n_core = counts.get(memory.pk, {}).get("n_core", 0)
            memory.n_working = counts.get(memory.pk, {}).get("n_working", 0)

    def get_readonly_fields(self, request, obj=None):
        fields = list(super().get_readonly_fields(request, obj))
        if obj is not None:
            fields += ["persona", "project"]  # a memory belongs to one persona and one project for good
        return fields

    def has_delete_permission(self, request, obj=None):
        return False  # deleting a memory would drop its lessons; archive the persona instead

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        if db_field.name == "persona":
            from personas.models import Persona

            kwargs["queryset"] = Persona.objects.not_archived()
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    @admin.display(description="core")
    def core_lessons(self, obj):
        return obj.n_core

    @admin.display(description="working")
    def working_lessons(self, obj):
        return obj.n_working

    @admin.display(description="lessons")
    def lessons_link(self, obj):
        if not obj.pk:
            return "—"
        url = reverse("admin:memory_lesson_changelist") + f"?memory__id__exact={obj.pk}"
        return format_html('<a href="{}">{} active core, {} active working</a>', url, obj.n_core, obj.n_working)

    @admin.display(description="compiled (what agents receive)")
    def compiled_preview(self, obj):
        from memory.selectors import compile_memory

        if not obj.pk:
            return "—"
        compiled = compile_memory(obj)
        if compiled.is_empty:
            return "This memory is empty: agents get the persona's prompt without memory sections."
        return format_html(
            "<p>{} core kept ({} cut), {} working kept ({} cut); {}/{} and {}/{} chars.</p>"
            '<pre style="white-space:pre-wrap;max-width:110ch">{}</pre>',
            len(compiled.core_kept),
            len(compiled.core_cut),
            len(compiled.working_kept),
            len(compiled.working_cut),
            compiled.core_chars,
            compiled.core_budget,
            compiled.working_chars,
            compiled.working_budget,
            compiled.text,
        )


class LessonRefInline(ReadOnlyMixin, admin.TabularInline):
    model = LessonRef
    fields = ["path", "start_line", "end_line", "position"]
    readonly_fields = fields
    extra = 0


class LessonConfirmationInline(ReadOnlyMixin, admin.TabularInline):
    model = LessonConfirmation
    fields = ["confirmed_on", "interaction", "created_at"]
    readonly_fields = fields
    extra = 0


class LessonChangeInline(ReadOnlyMixin, admin.TabularInline):
    model = Change
    fk_name = "lesson"
    fields = ["created_at", "action", "batch", "reverted_by"]
    readonly_fields = fields
    extra = 0
    verbose_name_plural = "history"


class CurateActionsMixin:
    """Bulk curation through the services: one batch per memory, so each memory's part reverts as a unit."""

    def has_curate_permission(self, request):
        return request.user.has_perm(CURATE)

    def _per_memory(self, request, queryset, label, apply):
        actor = services.Actor.for_user(request.user)
        by_memory = defaultdict(list)
        for lesson in queryset.select_related("memory"):
            by_memory[lesson.memory].append(lesson)
        done, refused = 0, []
        for memory, lessons in by_memory.items():
            batch = services.batch_create(
                memory=memory,
                kind=ChangeBatch.Kind.MANUAL,
                actor=actor,
                label=f"Admin: {label}",
                reason="bulk action in the admin site",
            )
            for lesson in lessons:
                try:
                    apply(lesson, actor, batch)
                    done += 1
                except (ValidationError, PermissionDenied) as exc:
                    refused.append(f"#{lesson.pk}: {'; '.join(getattr(exc, 'messages', [str(exc)]))}")
        self.message_user(request, f"{label}: {done} lesson(s).", messages.SUCCESS)
        if refused:
            self.message_user(request, "Not changed — " + " · ".join(refused[:10]), messages.WARNING)

    @admin.action(description="Protect selected lessons", permissions=["curate"])
    def protect(self, request, queryset):
        self._per_memory(
            request,
            queryset,
            "protected",
            lambda lesson, a, b: services.lesson_set_protected(lesson=lesson, protected=True, actor=a, batch=b),
        )

    @admin.action(description="Unprotect selected lessons", permissions=["curate"])
    def unprotect(self, request, queryset):
        self._per_memory(
            request,
            queryset,
            "unprotected",
            lambda lesson, a, b: services.lesson_set_protected(lesson=lesson, protected=False, actor=a, batch=b),
        )

    @admin.action(description="Delete selected lessons (soft, restorable)", permissions=["curate"])
    def soft_delete(self, request, queryset):
        self._per_memory(
            request, queryset, "deleted", lambda lesson, a, b: services.lesson_delete(lesson=lesson, actor=a, batch=b)
        )

    @admin.action(description="Restore selected deleted or superseded lessons", permissions=["curate"])
    def restore(self, request, queryset):
        self._per_memory(
            request, queryset, "restored", lambda lesson, a, b: services.lesson_restore(lesson=lesson, actor=a, batch=b)
        )


@admin.register(Lesson)
class LessonAdmin(TeamScopedAdmin, CurateActionsMixin, ReadOnlyMixin, admin.ModelAdmin):
    team_action = VIEW
    show_full_result_count = False  # no second COUNT(*) over every lesson when a filter is on
    list_display = [
        "id",
        "short_text",
        "persona",
        "project",
        "tier",
        "category",
        "relevance",
        "status",
        "protected",
        "lesson_date",
        "refs_display",
    ]
    list_display_links = ["id", "short_text"]
    list_filter = [
        "tier",
        "category",
        "status",
        "relevance",
        "protected",
        "unparsed",
        "vague",
        "memory__persona",
        "memory__project",
        "lesson_date",
    ]
    search_fields = ["text", "refs__path"]
    # No date_hierarchy: its year links come from a DISTINCT over every lesson; the date filter's are fixed.
    # The page's memories, personas and projects come in three small queries after the page itself:
    # joined into it, a planner may drive the join from the small tables and sort every lesson.
    list_select_related = False
    list_per_page = 50
    ordering = ["-id"]  # newest first straight from the primary key: no sort of every lesson per page
    actions = ["protect", "unprotect", "soft_delete", "restore"]
    inlines = [LessonRefInline, LessonConfirmationInline, LessonChangeInline]
    fields = [
        "memory",
        "tier",
        "category",
        "text_revealed",
        "relevance",
        "status",
        "protected",
        "lesson_date",
        "section",
        "unparsed",
        "raw_line",
        "vague",
        "content_hash",
        "interaction",
        "superseded_by",
        "derived_from",
        "source_entry_ids",
        "observed_at",
        "created_at",
        "updated_at",
    ]
    readonly_fields = fields

    def get_queryset(self, request):
        return (
            super()
            .get_queryset(request)
            .prefetch_related(
                Prefetch("refs", queryset=LessonRef.objects.order_by("position", "id")),
                "memory__persona",
                "memory__project",
            )
        )

    def change_view(self, request, object_id, form_url="", extra_context=None):
        extra_context = {**(extra_context or {}), "subtitle": f"Lesson #{object_id}"}
        return super().change_view(request, object_id, form_url, extra_context)

    @admin.display(description="text")
    def short_text(self, obj):
        return reveal_invisible(obj.text if len(obj.text) <= 90 else obj.text[:89] + "…")

    @admin.display(description="text (invisible characters shown)")
    def text_revealed(self, obj):
        return reveal_invisible(obj.text)

    @admin.display(description="persona", ordering="memory__persona__name")
    def persona(self, obj):
        return obj.memory.persona

    @admin.display(description="project", ordering="memory__project__name")
    def project(self, obj):
        return obj.memory.project

    @admin.display(description="refs")
    def refs_display(self, obj):
        return ", ".join(r.as_text() for r in obj.refs.all()) or "—"


class ChangeInline(ReadOnlyMixin, admin.TabularInline):
    model = Change
    fk_name = "batch"
    fields = ["lesson", "action", "before", "after", "reverted_by"]
    readonly_fields = fields
    extra = 0


@admin.register(ChangeBatch)
class ChangeBatchAdmin(TeamScopedAdmin, PageCountsAdminMixin, ReadOnlyMixin, admin.ModelAdmin):
    team_action = VIEW
    list_display = ["id", "created_at", "kind", "memory", "actor", "label", "change_count", "reverted_by"]
    list_filter = ["kind", "actor_type"]
    list_select_related = ["memory__persona", "memory__project", "actor_user"]
    search_fields = ["label", "reason", "actor_label"]
    inlines = [ChangeInline]
    fields = [
        "memory",
        "kind",
        "label",
        "reason",
        "actor_type",
        "actor_user",
        "actor_label",
        "created_at",
        "reverted_by",
    ]
    readonly_fields = fields

    def page_counts(self, rows):
        counts = grouped_counts(Change.objects.filter(batch_id__in=[b.pk for b in rows]), "batch_id", n=Count("id"))
        for batch in rows:
            batch.n_changes = counts.get(batch.pk, {}).get("n", 0)

    @admin.display(description="actor")
    def actor(self, obj):
        return obj.actor_display

    @admin.display(description="changes")
    def change_count(self, obj):
        return obj.n_changes


@admin.register(Interaction)
class InteractionAdmin(TeamScopedAdmin, ReadOnlyMixin, admin.ModelAdmin):
    team_action = VIEW
    list_per_page = 50
    show_full_result_count = False
    list_display = ["id", "created_at", "memory", "trigger_type", "outcome", "status"]
    list_filter = ["status", "trigger_type"]
    list_select_related = ["memory__persona", "memory__project"]
    search_fields = ["summary", "outcome"]


@admin.register(AgentToken)
class AgentTokenAdmin(TeamScopedAdmin, ReadOnlyMixin, admin.ModelAdmin):
    team_via = "persona__team"  # a token is its persona's: the persona's team manages it
    list_per_page = 50
    show_full_result_count = False
    list_display = ["prefix", "name", "persona", "project", "created_at", "last_used_at", "revoked_at"]
    list_filter = ["persona", "project"]
    list_select_related = ["persona", "project"]
    search_fields = ["prefix", "name", "persona__name"]
    exclude = ["token_hash"]  # a hash is useless to a reader and should not be copied around


@admin.register(DetectionRun)
class DetectionRunAdmin(TeamScopedAdmin, ReadOnlyMixin, admin.ModelAdmin):
    team_action = VIEW
    list_per_page = 50
    show_full_result_count = False
    list_display = [
        "started_at",
        "memory",
        "engine",
        "status",
        "calls",
        "tokens_in",
        "tokens_out",
        "lessons_sent",
        "created",
    ]
    list_filter = ["status", "engine"]
    list_select_related = ["memory__persona", "memory__project"]
    search_fields = ["message"]
    date_hierarchy = "started_at"


@admin.register(LLMCall)
class LLMCallAdmin(TeamScopedAdmin, ReadOnlyMixin, admin.ModelAdmin):
    team_via, team_action = staticmethod(llm_call_teams), VIEW

    def team_of(self, obj):
        return obj.memory.project.team_id if obj.memory_id else (obj.persona.team_id if obj.persona_id else None)

    list_per_page = 50
    show_full_result_count = False
    list_display = [
        "created_at",
        "purpose",
        "provider",
        "model_name",
        "persona",
        "tokens_in",
        "tokens_out",
        "latency_ms",
        "outcome",
    ]
    list_filter = ["purpose", "provider", "outcome"]
    list_select_related = ["persona"]
    search_fields = ["model_name", "error"]
    date_hierarchy = "created_at"


from memory.sso import admin as sso_admin  # noqa: E402, F401  (registers the single sign-on pages)
from memory.webhooks import admin as webhooks_admin  # noqa: E402, F401  (endpoints and their delivery log)
