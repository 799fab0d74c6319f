from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.templatetags.static import static
from django.urls import include, path
from django.views.generic import RedirectView

from memory.sso import views as sso_views


class FaviconView(RedirectView):
    """Browsers and bots ask for /favicon.ico whatever the page links; send them to the real icon."""

    permanent = True

    def get_redirect_url(self, *args, **kwargs):
        return static("img/favicon.svg")


urlpatterns = [
    path("favicon.ico", FaviconView.as_view()),
    path("admin/", admin.site.urls),
    path("api/", include("memory.api.urls")),
    path("accounts/login/", sso_views.login, name="login"),
    path("accounts/", include("memory.sso.urls")),
    path("scim/v2/", include("memory.sso.scim_urls")),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("", include("memory.urls")),
]
