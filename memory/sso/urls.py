from django.urls import path

from memory.sso import views

# Under /accounts/ (nightwatch/urls.py), beside the login page.
urlpatterns = [
    path("login/local/", views.break_glass_login, name="login_local"),
    path("sso/start/", views.SsoStart.as_view(), name="oidc_authentication_init"),
    path("sso/callback/", views.SsoCallback.as_view(), name="oidc_authentication_callback"),
    path("sso/no-access/", views.no_access, name="sso_no_access"),
]
