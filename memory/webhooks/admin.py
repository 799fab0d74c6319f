"""Webhook endpoints in the admin: a team's approvers add, pause, test and rotate their own team's."""

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.urls import reverse
from django.utils.html import format_html

from memory.access import TeamScopedAdmin
from memory.webhooks import services, transport
from memory.webhooks.models import EVENT_TYPES, WebhookDelivery, WebhookEndpoint


class EndpointForm(forms.ModelForm):
    url = forms.URLField(assume_scheme="https", max_length=2000, label="URL")
    event_types = forms.MultipleChoiceField(
        choices=list(EVENT_TYPES.items()), widget=forms.CheckboxSelectMultiple, help_text="What it receives."
    )

    class Meta:
        model = WebhookEndpoint
        fields = ["team", "url", "description", "event_types", "format", "include_lesson_text", "enabled"]

    def clean_url(self):
        url = self.cleaned_data["url"]
        problem = transport.url_problem(url)
        if problem:
            raise ValidationError(f"This URL {problem}.")
        return url


@admin.register(WebhookEndpoint)
class WebhookEndpointAdmin(TeamScopedAdmin, admin.ModelAdmin):
    team_via = "team"
    team_may_add = True
    team_may_change = True
    form = EndpointForm
    list_display = ["url", "team", "format", "event_list", "state", "consecutive_failures", "created_at"]
    list_filter = ["format", "enabled"]
    list_select_related = ["team"]
    search_fields = ["url", "description"]
    readonly_fields = ["state", "pause_reason", "secret_hint", "deliveries_link", "created_at", "created_by"]
    actions = ["send_test_event", "rotate_secret", "resume"]

    def has_delete_permission(self, request, obj=None):
        return super().has_delete_permission(request, obj) or (obj is not None and self._in_teams(request, obj))

    @admin.display(description="events")
    def event_list(self, obj):
        return ", ".join(obj.event_types)

    @admin.display(description="state")
    def state(self, obj):
        if obj.paused_at:
            return f"paused since {obj.paused_at:%Y-%m-%d %H:%M}"
        return "sending" if obj.enabled else "off"

    @admin.display(description="signing secret")
    def secret_hint(self, obj):
        if not obj.pk:
            return "Shown once, when the endpoint is saved."
        return f"{obj.secret[:10]}… (shown once at creation; rotate it to get a new one)"

    @admin.display(description="delivery log")
    def deliveries_link(self, obj):
        if not obj.pk:
            return "-"
        url = reverse("admin:memory_webhookdelivery_changelist") + f"?endpoint__id__exact={obj.pk}"
        return format_html('<a href="{}">Deliveries of this endpoint</a>', url)

    def save_model(self, request, obj, form, change):
        if not change:
            obj.created_by = request.user
        super().save_model(request, obj, form, change)
        if not change:
            messages.warning(
                request,
                f"Signing secret of endpoint #{obj.pk}: {obj.secret} — copy it now; it is not shown again.",
            )

    @admin.action(description="Send a test event")
    def send_test_event(self, request, queryset):
        for endpoint in queryset:
            services.webhook_send_test(endpoint=endpoint, user=request.user)
        messages.success(request, f"Test event queued for {queryset.count()} endpoint(s): see the delivery log.")

    @admin.action(description="Rotate the signing secret (the old one stays valid for 24 hours)")
    def rotate_secret(self, request, queryset):
        for endpoint in queryset:
            secret = services.webhook_endpoint_rotate_secret(endpoint=endpoint)
            messages.warning(request, f"New secret of endpoint #{endpoint.pk}: {secret} — copy it now.")

    @admin.action(description="Resume sending (paused or off endpoints)")
    def resume(self, request, queryset):
        for endpoint in queryset:
            services.webhook_endpoint_resume(endpoint=endpoint)
        messages.success(request, "Sending resumed; what waited goes out with the next pass.")


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(TeamScopedAdmin, admin.ModelAdmin):
    team_via = "endpoint__team"
    list_display = [
        "id",
        "event_type",
        "event_uid",
        "endpoint",
        "status",
        "attempts",
        "last_status_code",
        "next_attempt_at",
        "delivered_at",
    ]
    list_filter = ["status"]
    list_select_related = ["event", "endpoint"]
    search_fields = ["event__uid"]
    actions = ["redeliver"]
    show_full_result_count = False

    def has_add_permission(self, request, *args):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    @admin.display(description="event")
    def event_type(self, obj):
        return obj.event.type

    @admin.display(description="event id")
    def event_uid(self, obj):
        return obj.event.uid

    @admin.action(description="Redeliver (same event id)")
    def redeliver(self, request, queryset):
        for delivery in queryset:
            services.webhook_redeliver(delivery=delivery)
        messages.success(request, f"{queryset.count()} delivery(ies) queued again.")
