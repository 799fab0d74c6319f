from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.templatetags.static import static
from django.urls import include, path
from django.views.generic import RedirectView


class FaviconView(RedirectView):
    """Browsers and bots ask for /favicon.ico whatever the page links; send them to the real icon."""

    permanent = True

    def get_redirect_url(self, *args, **kwargs):
        return static("img/favicon.svg")


urlpatterns = [
    path("favicon.ico", FaviconView.as_view()),
    path("admin/", admin.site.urls),
    path("api/", include("memory.api.urls")),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("", include("memory.urls")),
]
