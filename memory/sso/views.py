"""Sign-in pages: the login page (with "Sign in with <provider>"), the break-glass password login, the OIDC
redirect and callback, and the page for a person the provider's groups give no access."""

from django.conf import settings
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.core.exceptions import SuspiciousOperation
from django.http import Http404, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse
from mozilla_django_oidc.views import OIDCAuthenticationCallbackView, OIDCAuthenticationRequestView

from memory.access import VIEW, access_for
from memory.sso.models import IdpIdentity
from memory.sso.oidc import ProviderUnavailable, library_setting, oidc_enabled
from memory.sso.pages import provider_unavailable, sign_in_failed
from memory.sso.recheck import session_started

# The password form refuses everyone but superusers when LOCAL_LOGIN is off (memory/sso/backends.py).


def _login_context(*, break_glass=False):
    return {
        "oidc_enabled": oidc_enabled(),
        "provider_name": settings.OIDC_PROVIDER_NAME,
        "local_login": settings.LOCAL_LOGIN,
        "break_glass": break_glass,
    }


def login(request):
    """The login page: the provider's button when OIDC is configured, the password form unless LOCAL_LOGIN=off."""
    context = _login_context()
    context["ended"] = request.GET.get("sso") == "ended"
    return auth_views.LoginView.as_view(extra_context=context)(request)


def break_glass_login(request):
    """The password form whatever LOCAL_LOGIN says: with it off, only superusers get in (the emergency path)."""
    return auth_views.LoginView.as_view(extra_context=_login_context(break_glass=True))(request)


class SsoStart(OIDCAuthenticationRequestView):
    """Sends the browser to the provider, with state, nonce and a PKCE challenge kept in the session."""

    def __init__(self, *args, **kwargs):
        super(OIDCAuthenticationRequestView, self).__init__(*args, **kwargs)

    @staticmethod
    def get_settings(attr, *args):
        return library_setting(attr, *args)

    def get(self, request):
        if not oidc_enabled():
            raise Http404("Single sign-on is not configured")
        try:
            self.OIDC_OP_AUTH_ENDPOINT = library_setting("OIDC_OP_AUTHORIZATION_ENDPOINT")
        except ProviderUnavailable:
            return provider_unavailable(request)
        self.OIDC_RP_CLIENT_ID = settings.OIDC_CLIENT_ID
        return super().get(request)


class SsoCallback(OIDCAuthenticationCallbackView):
    """The provider's answer: the code is exchanged, the ID token checked, the person signed in or told why not."""

    @staticmethod
    def get_settings(attr, *args):
        return library_setting(attr, *args)

    def get(self, request):
        if not oidc_enabled():
            raise Http404("Single sign-on is not configured")
        if "code" in request.GET and request.GET.get("state") not in request.session.get("oidc_states", {}):
            # Tampered, replayed or from another browser: the state this session sent is not the one back.
            return sign_in_failed(request, "This sign-in answer does not match a sign-in started in this browser.")
        try:
            return super().get(request)
        except ProviderUnavailable:
            return provider_unavailable(request)
        except SuspiciousOperation as exc:
            return sign_in_failed(request, getattr(request, "sso_error", "") or str(exc))

    def login_failure(self):
        if self.request.GET.get("error"):
            message = self.request.GET.get("error_description") or "The identity provider did not sign you in."
        else:
            message = (
                getattr(self.request, "sso_error", "") or "The sign-in with the identity provider did not complete."
            )
        return sign_in_failed(self.request, message)

    def login_success(self):
        response = super().login_success()
        tokens = getattr(self.request, "sso_tokens", {}) or {}
        session_started(self.request, tokens.get("refresh_token"))
        if not access_for(self.user).anywhere(VIEW):
            return HttpResponseRedirect(reverse("sso_no_access"))
        return response


@login_required
def no_access(request):
    """Signed in, but the provider's groups give no role in any team (yet)."""
    identity = IdpIdentity.objects.filter(user=request.user).first()
    context = {"groups": identity.groups if identity else [], "has_access": access_for(request.user).anywhere(VIEW)}
    return TemplateResponse(request, "memory/sso/no_access.html", context)
